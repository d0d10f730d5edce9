"""The body of a create or an update, decoded by its media type as kube-apiserver does.

``application/json`` and ``application/yaml`` bodies are read (YAML as
sigs.k8s.io/yaml reads it: YAML 1.1, where ``y``, ``yes`` and ``on`` are
true); a body without a media type is JSON (kube-apiserver takes the first
type its serializers list, as the official Python client and client-go's
scale client rely on); any other media type is ``415 UnsupportedMediaType``
naming the accepted ones. A body that does not decode is ``400 BadRequest``
in kube-apiserver's words: ``the object provided is unrecognized (must be of
type K): ...``, then Go's error and a summary of the body (its first 30
bytes, in hex unless it starts with ``{``). JSON ``null`` is an empty object.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import yaml

from ..machinery.go_json import syntax_error, unmarshal_type_error
from ..machinery.status import StatusError

__all__ = ["decode_body"]

_JSON, _YAML = "application/json", "application/yaml"
_PROTOBUF = "application/vnd.kubernetes.protobuf"
_TYPE_META = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
              'Kind string "json:\\"kind,omitempty\\"" }')
_PROTOBUF_PREFIX = b"k8s\x00"


class _YAML11Loader(yaml.SafeLoader):
    """PyYAML's safe loader, with go-yaml v2's booleans (y, Y, n, N too)."""


_YAML11Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:y|Y|n|N|yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE"
                             r"|on|On|ON|off|Off|OFF)$"), list("yYnNtTfFoO"))
_YAML11Loader.add_constructor(
    "tag:yaml.org,2002:bool",
    lambda loader, node: loader.construct_scalar(node) in (  # type: ignore[arg-type]
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"))


def summarize(data: bytes, limit: int = 30) -> str:
    """apiserver's ``summarizeData``: a body as an error message shows it."""
    if not data:
        return "<empty>"
    head = data[:limit]
    text = head.decode(errors="replace") if head[:1] == b"{" else head.hex()
    return text + " ..." if len(data) > limit else text


def _unrecognized(kind: str, why: str, raw: bytes) -> StatusError:
    return StatusError.bad_request(f"the object provided is unrecognized (must be of type "
                                   f"{kind}): {why} ({summarize(raw)})")


def decode_body(content_type: str, raw: bytes, kind: str) -> dict[str, Any]:
    """The object a create or update body holds (``kind``: the resource's kind)."""
    media = content_type.split(";")[0].strip().lower() or _JSON
    if media == _JSON:
        problem = syntax_error(raw)
        if problem is not None:
            raise _unrecognized(kind, f"couldn't get version/kind; json parse error: {problem}",
                                raw)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as err:  # valid for Go, not for orjson (huge numbers)
            raise _unrecognized(kind, f"couldn't get version/kind; json parse error: {err}",
                                raw) from None
    elif media == _YAML:
        try:
            body = yaml.load(raw, Loader=_YAML11Loader)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            line = f"line {mark.line + 1}: " if mark is not None else ""
            problem = getattr(err, "problem", None) or str(err)
            raise _unrecognized(kind, f"yaml: {line}{problem}", raw) from None
    elif media == _PROTOBUF and not raw.startswith(_PROTOBUF_PREFIX):
        raise _unrecognized(kind, "provided data does not appear to be a protobuf message, "
                            "expected prefix [107 56 115 0]", raw)
    else:
        raise StatusError(415, "UnsupportedMediaType", "the body of the request was in an "
                          "unknown format - accepted media types include: application/json, "
                          "application/yaml, application/vnd.kubernetes.protobuf")
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise _unrecognized(kind, "couldn't get version/kind; json parse error: "
                            + unmarshal_type_error(body, _TYPE_META), raw)
    return body
