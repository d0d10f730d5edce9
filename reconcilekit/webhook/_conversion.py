"""ConversionReview v1: converting custom resources between versions through a hub.

A kind served at several versions names one of them the *hub*; every other
version (a *spoke*) knows how to convert to the hub and back, as
controller-runtime's ``conversion.Hub``/``Convertible``. Converting v1 to v3
is v1 → hub → v3: n versions need 2(n-1) functions, never n².

A function gets its own copy of the object and returns the converted one;
the framework sets ``apiVersion`` (and keeps ``kind`` and ``metadata``
exactly as they were, which kube-apiserver insists on: a conversion that
changes metadata other than labels and annotations is refused). A function
that raises fails the whole review with a message naming the object and the
versions: kube-apiserver then answers the client's request with that
message.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._foundations.objects import Obj
from ._admission_review import MalformedReview, review_request, shown

__all__ = ["Conversion", "ConversionFailed", "ConvertFunction"]

CONVERSION_V1: Final = "apiextensions.k8s.io/v1"
ConvertFunction = Callable[[Obj], Obj]


class ConversionFailed(Exception):
    """A conversion function refused an object; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Conversion:
    """How to convert one kind (``group``, ``kind``) between its versions through ``hub``.

    ``spokes`` maps each other version to ``(to_hub, from_hub)``.
    """

    group: str
    kind: str
    hub: str
    spokes: Mapping[str, tuple[ConvertFunction, ConvertFunction]]

    def __post_init__(self) -> None:
        if self.hub in self.spokes:
            raise ValueError(f"{self.kind}: the hub version {self.hub} cannot also be a spoke")
        if not self.spokes:
            raise ValueError(f"{self.kind}: a conversion needs at least one version besides "
                             f"the hub {self.hub}")

    @property
    def versions(self) -> tuple[str, ...]:
        return (self.hub, *self.spokes)

    def convert(self, obj: Obj, desired_api_version: str) -> Obj:
        """``obj`` at ``desired_api_version``; raises :class:`ConversionFailed`."""
        have = _version_of(obj, self.group)
        want = _version_of({"apiVersion": desired_api_version}, self.group)
        name = (obj.get("metadata") or {}).get("name", "")
        for version in (have, want):
            if version not in self.versions:
                raise ConversionFailed(f"{self.kind} {shown(name)}: no conversion for version "
                                       f"{shown(version)} (known: {', '.join(self.versions)})")
        out = copy.deepcopy(obj)
        if have == want:
            return out
        try:
            if have != self.hub:
                out = self._step(self.spokes[have][0], out, f"{self.group}/{self.hub}")
            if want != self.hub:
                out = self._step(self.spokes[want][1], out, desired_api_version)
        except ConversionFailed:
            raise
        except Exception as err:
            raise ConversionFailed(f"converting {self.kind} {shown(name)} from {have} to {want} "
                                   f"failed: {type(err).__name__}: {err}") from err
        return out

    def _step(self, function: ConvertFunction, obj: Obj, api_version: str) -> Obj:
        metadata = copy.deepcopy(obj.get("metadata"))
        out = function(obj)
        if not isinstance(out, dict):
            raise ConversionFailed(f"the {self.kind} conversion to {api_version} returned "
                                   f"{type(out).__name__}, not the object")
        out["apiVersion"], out["kind"] = api_version, self.kind
        if metadata is not None:
            out["metadata"] = metadata
        return out


def conversion_request(review: Any, *, body: bytes | None = None
                       ) -> tuple[str, str, list[Obj]]:
    """(uid, desiredAPIVersion, objects) of a ConversionReview v1 (``body``: the JSON it
    was decoded from, as for :meth:`AdmissionRequest.from_review`)."""
    req = review_request(review, CONVERSION_V1, "ConversionReview",
                         "the CRD's conversionReviewVersions", body=body)
    if not isinstance(req, Mapping) or not isinstance(req.get("uid"), str):
        raise MalformedReview("the ConversionReview has no request with a uid")
    desired = req.get("desiredAPIVersion")
    objects = req.get("objects")
    if not isinstance(desired, str) or "/" not in desired:
        raise MalformedReview(f"request.desiredAPIVersion {shown(desired)} is not "
                              f"group/version")
    if not isinstance(objects, list) or not all(isinstance(o, Mapping) for o in objects):
        raise MalformedReview("request.objects is not a list of objects")
    for index, obj in enumerate(objects):
        if not isinstance(obj.get("metadata", {}), Mapping):
            raise MalformedReview(f"request.objects[{index}].metadata "
                                  f"{shown(obj.get('metadata'))} is not an object")
    return req["uid"], desired, [dict(o) for o in objects]


def conversion_response(uid: str, converted: list[Obj] | None, failure: str | None) -> Obj:
    result: Obj = ({"status": "Success"} if failure is None
                   else {"status": "Failure", "message": failure})
    response: Obj = {"uid": uid, "result": result}
    if failure is None:
        response["convertedObjects"] = converted or []
    return {"apiVersion": CONVERSION_V1, "kind": "ConversionReview", "response": response}


def _version_of(obj: Mapping[str, Any], group: str) -> str:
    api_version = str(obj.get("apiVersion") or "")
    prefix, _, version = api_version.rpartition("/")
    if prefix != group:
        raise ConversionFailed(f"apiVersion {shown(api_version)} is not in group {group!r}")
    return version
