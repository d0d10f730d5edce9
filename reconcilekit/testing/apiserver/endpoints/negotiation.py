"""What an Accept header asks a read for: the object, a Table, or its metadata alone.

kube-apiserver reads ``as=``, ``g=`` and ``v=`` parameters of the Accept
media types (k8s.io/apiserver/pkg/endpoints/handlers/response.go): the first
media type it can serve wins. ``as=Table;g=meta.k8s.io`` is what ``kubectl
get`` asks for; ``as=PartialObjectMetadata`` (a get or a watch) and
``as=PartialObjectMetadataList`` (a list) are what metadata informers ask for:
the answer keeps ``metadata`` and drops everything else, and is of kind
``PartialObjectMetadata[List]`` in ``meta.k8s.io/v1`` (or ``v1beta1``). Asking
a list for ``PartialObjectMetadata``, or a single object for the ``List``, is
406 NotAcceptable, whatever else the header offers (as measured on
kube-apiserver 1.28).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..machinery.resources import ResourceType
from ..machinery.status import StatusError

__all__ = ["Rendering", "partial_object_metadata", "rendering"]

_META_VERSIONS = ("v1", "v1beta1")


@dataclass(frozen=True, slots=True)
class Rendering:
    """How to answer: ``form`` object, table or metadata, in ``meta.k8s.io/<version>``."""

    form: Literal["object", "table", "metadata"]
    version: str = "v1"


OBJECT = Rendering("object")


def rendering(accept: str, rtype: ResourceType, *, is_list: bool) -> Rendering:
    """The first media type of ``accept`` this server can answer a read with."""
    for part in accept.split(","):
        raw = [p.strip() for p in part.split(";")[1:]]
        params = dict(p.partition("=")[::2] for p in raw)
        as_ = params.get("as")
        if as_ is None:
            return OBJECT
        if params.get("g") != "meta.k8s.io" or params.get("v") not in _META_VERSIONS:
            continue
        if as_ == "Table":
            return Rendering("table", params["v"])
        if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            if (as_ == "PartialObjectMetadataList") != is_list:
                raise _not_acceptable(as_, rtype, is_list)
            return Rendering("metadata", params["v"])
    return OBJECT


def partial_object_metadata(obj: Mapping[str, Any], version: str = "v1") -> dict[str, Any]:
    """``obj`` as a PartialObjectMetadata: its metadata alone."""
    return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}",
            "metadata": obj.get("metadata") or {}}


def _not_acceptable(as_: str, rtype: ResourceType, is_list: bool) -> StatusError:
    r = rtype.resource
    if rtype.builtin:
        go_type = f"*{r.group.split('.', 1)[0] if r.group else 'core'}.{r.kind}"
    else:
        go_type = "*unstructured.Unstructured"
    if is_list:
        return StatusError(406, "NotAcceptable", f"you requested {as_}, but the requested object "
                           f"is a list ({go_type}List)")
    return StatusError(406, "NotAcceptable", f"you requested {as_}, but the requested object is "
                       f"not a list ({go_type})")
