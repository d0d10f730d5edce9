"""Continue tokens of paged lists, as the etcd3 storage writes and reads them
(``k8s.io/apiserver/pkg/storage/continue.go``).

A token is unpadded URL-safe base64 of ``{"v": "meta.k8s.io/v1", "rv": RV,
"start": "NAMESPACE/NAME"}``: the resourceVersion the first page was read at,
and the key after which the next page starts. :func:`decode_continue` refuses
a token it did not write with the storage's 400 messages.
"""

from __future__ import annotations

import base64

import orjson

from ..machinery.decoding import go_base64_decode
from ..machinery.status import DecodeError, StatusError
from .versioned_store import ObjKey

__all__ = ["decode_continue", "encode_continue", "start_key"]


def encode_continue(rv: int, key: ObjKey) -> str:
    """A continue token as kube-apiserver writes one: unpadded URL-safe base64 of JSON."""
    token = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{key[0]}/{key[1]}"})
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    """The (resourceVersion, start key) of a continue token, with storage's errors (400)."""
    invalid = "invalid continue token: continue key is not valid"
    try:
        data = orjson.loads(go_base64_decode(token, raw_url=True))
    except (DecodeError, orjson.JSONDecodeError) as err:
        raise StatusError.bad_request(f"{invalid}: {err}") from None
    if not isinstance(data, dict) or data.get("v") != "meta.k8s.io/v1":
        version = data.get("v") if isinstance(data, dict) else None
        raise StatusError.bad_request(f"{invalid}: server does not recognize this encoded "
                                      f"version {version or ''}".rstrip())
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or rv <= 0:
        raise StatusError.bad_request(f"{invalid}: incorrect encoded start resourceVersion "
                                      "(version meta.k8s.io/v1)")
    if not isinstance(start, str) or not start:
        raise StatusError.bad_request(f"{invalid}: encoded start key empty (version "
                                      "meta.k8s.io/v1)")
    return rv, start


def start_key(start: str) -> ObjKey:
    """The (namespace, name) after which a continued list resumes."""
    if not start:
        return ("", "")
    ns, _, name = start.partition("/")
    return (ns, name)
