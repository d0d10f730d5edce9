"""Decoding a request body into the kind's Go type, as kube-apiserver's decoder does.

kube-apiserver refuses a body whose values do not fit the Go type, before
any validation: a wrong JSON type, bad base64 in a ``[]byte`` field, a
metav1.MicroTime that ``time.Parse`` refuses. Decoding also converts:
``[]byte`` values are stored as Go re-encodes them, MicroTimes are written
in UTC. What a kind's Go type holds beyond the generic decoder (a
ConfigMap's ``binaryData``, a Secret's ``stringData``) is its strategy's
``check_encoding``, built from :func:`string_map` and :func:`bytes_map`.
A built-in kind's fields are checked and its unknown fields dropped by its
OpenAPI schema (:mod:`.builtin_schema`).
Failures are :class:`DecodeError` carrying Go's own message; the server
answers them with 400 ("X in version "v1" cannot be handled as a X: ...")
or, for a patched object, 422 on ``patch``.
"""

from __future__ import annotations

import base64
import copy
import datetime
from typing import Any

from ...._foundations.go_compat import go_quote
from .builtin_schema import kind_fields, microtime_fields, object_meta_fields
from .resources import ResourceType
from .status import DecodeError
from .unstructured import Obj, json_type

__all__ = ["bytes_map", "decode", "go_base64_decode", "normalize_microtimes", "parse_micro_time",
           "string_map"]



def decode(rtype: ResourceType, obj: Obj, unknown: list[str] | None = None, *,
           sort: bool = False) -> Obj:
    """A copy of ``obj`` as decoding it into the kind's Go type leaves it.

    With ``unknown`` given, a built-in kind's fields are decoded by its
    schema: the unknown ones are dropped and their paths added to
    ``unknown`` (``sort``: read in sorted key order, as a patched object is).
    Raises :class:`DecodeError`.
    """
    obj = copy.deepcopy(obj)
    r = rtype.resource
    fields = kind_fields(r.group, r.version, r.kind) if (
        unknown is not None and rtype.builtin) else None
    if fields is not None:
        assert unknown is not None
        unknown.extend(fields.decode(obj, sort=sort))
    elif not rtype.builtin:
        _custom_resource_meta(obj["metadata"], unknown, sort)
    else:
        meta = obj["metadata"]
        string_map(meta, "labels", "ObjectMeta.metadata.labels")
        string_map(meta, "annotations", "ObjectMeta.metadata.annotations")
        _string_list(meta, "finalizers", "ObjectMeta.metadata.finalizers")
    return obj


# ObjectMeta's fields that are pointers in Go: a zero value is kept, not omitted.
_META_POINTERS = frozenset({"deletionTimestamp", "deletionGracePeriodSeconds"})


def _custom_resource_meta(meta: Obj, unknown: list[str] | None, sort: bool) -> None:
    """A custom resource's metadata as kube-apiserver's CRD handler leaves it: decoded into
    an ``ObjectMeta`` (a value of the wrong type fails, naming ``ObjectMeta.<field>``; an
    unknown field is dropped and reported as ``metadata.<field>``) and encoded again, so
    null label and annotation values become ``""`` and empty fields are omitted."""
    found = object_meta_fields().decode(meta, sort=sort, prefix="metadata.")
    if unknown is not None:
        unknown.extend(found)
    for key in ("labels", "annotations"):
        if isinstance(values := meta.get(key), dict):
            for k, v in values.items():
                if v is None:
                    values[k] = ""
    for key in [k for k, v in meta.items()
                if v is None or (k not in _META_POINTERS and v in ("", 0, [], {}))]:
        del meta[key]


def _type_error(value: Any, go_field: str, go_type: str) -> DecodeError:
    return DecodeError(f"json: cannot unmarshal {json_type(value)} into Go struct field "
                       f"{go_field} of type {go_type}")


def string_map(parent: Obj, key: str, go_field: str, element: str = "string") -> None:
    """A ``map[string]string`` (``element``: the values' Go type): a null value is the
    zero value; raises :class:`DecodeError` for a value of another type."""
    value = parent.get(key)
    if value is None:
        return
    if not isinstance(value, dict):
        raise _type_error(value, go_field, f"map[string]{element}")
    for k, v in value.items():
        if v is None:  # JSON null decodes to the zero value
            value[k] = ""
        elif not isinstance(v, str):
            raise _type_error(v, go_field, element)


def _string_list(parent: Obj, key: str, go_field: str) -> None:
    value = parent.get(key)
    if value is None:
        return
    if not isinstance(value, list):
        raise _type_error(value, go_field, "[]string")
    for v in value:
        if not isinstance(v, str):
            raise _type_error(v, go_field, "string")


def bytes_map(parent: Obj, key: str, go_field: str) -> None:
    """A ``map[string][]byte``: base64 values, stored as Go re-encodes them."""
    string_map(parent, key, go_field, "[]uint8")
    for k, v in (parent.get(key) or {}).items():
        parent[key][k] = base64.b64encode(go_base64_decode(v)).decode()


_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_STD = {c: i for i, c in enumerate(_ALPHABET + b"+/")}
_URL = {c: i for i, c in enumerate(_ALPHABET + b"-_")}
_NEWLINES = (ord("\n"), ord("\r"))


def go_base64_decode(text: str, *, raw_url: bool = False) -> bytes:
    """Go's ``base64.StdEncoding`` (or ``RawURLEncoding``) ``DecodeString``.

    Newlines are skipped, padding is required (StdEncoding) or refused
    (RawURLEncoding), trailing bits are ignored; an error is a
    :class:`DecodeError` ``illegal base64 data at input byte N``, N as Go
    reports it.
    """
    values = _URL if raw_url else _STD
    src = text.encode()
    out = bytearray()
    si = 0
    while si < len(src):
        quantum: list[int] = []
        while len(quantum) < 4:
            if si == len(src):
                if not quantum:
                    return bytes(out)
                if len(quantum) == 1 or not raw_url:
                    raise _corrupt(si - len(quantum))
                break
            c = src[si]
            si += 1
            if c in values:
                quantum.append(values[c])
                continue
            if c in _NEWLINES:
                continue
            if raw_url or c != ord("=") or len(quantum) < 2:
                raise _corrupt(si - 1)
            if len(quantum) == 2:  # "==" expected
                while si < len(src) and src[si] in _NEWLINES:
                    si += 1
                if si == len(src):
                    raise _corrupt(len(src))
                if src[si] != ord("="):
                    raise _corrupt(si - 1)
                si += 1
            while si < len(src) and src[si] in _NEWLINES:
                si += 1
            if si < len(src):
                raise _corrupt(si)
            break
        value = 0
        for i, bits in enumerate(quantum):
            value |= bits << (18 - 6 * i)
        out += value.to_bytes(3, "big")[:len(quantum) - 1]
    return bytes(out)


def _corrupt(offset: int) -> DecodeError:
    return DecodeError(f"illegal base64 data at input byte {offset}")


_MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"  # metav1.RFC3339Micro
_RANGES = {"month": (1, 12), "hour": (0, 23), "minute": (0, 59), "second": (0, 59)}


def _digits(text: str) -> bool:
    return bool(text) and text.isascii() and text.isdigit()


def normalize_microtimes(rtype: ResourceType, obj: Obj) -> None:
    """Check metav1.MicroTime fields and write them back in UTC.

    kube-apiserver decodes MicroTime with Go's ``time.Parse`` and the layout
    ``2006-01-02T15:04:05.000000Z07:00``: exactly six fractional digits, any
    zone (written back as UTC). Anything else is a :class:`DecodeError` with
    ``time.Parse``'s message. Which fields are MicroTimes is read from the
    kind's OpenAPI schema (:func:`.builtin_schema.microtime_fields`).
    """
    r = rtype.resource
    paths = microtime_fields(r.group, r.version, r.kind) if rtype.builtin else ()
    for path in paths:
        parent: Any = obj
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict) or parent.get(path[-1]) is None:
            continue
        value = parent[path[-1]]
        if not isinstance(value, str):
            raise DecodeError(f"json: cannot unmarshal {json_type(value)} into Go value of "
                              "type string")
        when = parse_micro_time(value).astimezone(datetime.UTC)
        parent[path[-1]] = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(value: str) -> datetime.datetime:
    """Go's ``time.Parse(RFC3339Micro, value)``, with its errors as :class:`DecodeError`."""
    rest = value
    fields: dict[str, int] = {}

    def fail(element: str, at: str, message: str = "") -> DecodeError:
        if message:
            return DecodeError(f"parsing time {go_quote(value)}{message}")
        return DecodeError(f"parsing time {go_quote(value)} as {go_quote(_MICRO_LAYOUT)}: "
                           f"cannot parse {go_quote(at)} as {go_quote(element)}")

    for element, name in (("2006", "year"), ("-", ""), ("01", "month"), ("-", ""),
                          ("02", "day"), ("T", ""), ("15", "hour"), (":", ""),
                          ("04", "minute"), (":", ""), ("05", "second")):
        if not name:
            if not rest.startswith(element):
                raise fail(element, rest)
            rest = rest[1:]
            continue
        width = len(element)
        if name == "hour" and _digits(rest[:1]) and not _digits(rest[1:2]):
            width = 1  # time.getnum: the hour alone may have one digit
        if len(rest) < width or not _digits(rest[:width]):
            raise fail(element, rest)
        fields[name], rest = int(rest[:width]), rest[width:]
        low, high = _RANGES.get(name, (0, 9999))
        if not low <= fields[name] <= high:
            raise fail(element, rest, f": {name} out of range")
    if len(rest) < 7 or rest[0] not in ".," or not _digits(rest[1:7]):
        raise fail(".000000", rest)
    micros, rest = int(rest[1:7]), rest[7:]
    if rest.startswith("Z"):
        zone, rest = datetime.UTC, rest[1:]
    elif len(rest) >= 6 and rest[0] in "+-" and rest[3] == ":" and (
            rest[1:3] + rest[4:6]).isdigit():
        offset = datetime.timedelta(hours=int(rest[1:3]), minutes=int(rest[4:6]))
        zone = datetime.timezone(-offset if rest[0] == "-" else offset)
        rest = rest[6:]
    else:
        raise fail("Z07:00", rest)
    if rest:
        raise fail("", rest, f": extra text: {go_quote(rest)}")
    try:
        return datetime.datetime(fields["year"], fields["month"], fields["day"],
                                 fields["hour"], fields["minute"], fields["second"], micros,
                                 tzinfo=zone)
    except ValueError:
        raise fail("", rest, ": day out of range") from None
