"""``/metrics``: kube-apiserver's ``apiserver_request_total``, counted per request.

Each server keeps its own counters, so servers in one process count apart.
A request about a resource is counted once its answer is known, under
kube-apiserver's labels: ``verb`` as its metrics name it (``GET``, ``LIST``
for a GET of a collection, ``WATCH``, ``POST``, ``PUT``, ``PATCH``,
``APPLY`` for an apply patch, ``DELETE`` for one object or a collection),
``dry_run`` (the ``dryRun`` values, sorted, comma-joined), ``group``,
``version``, ``resource``, ``subresource``, ``scope`` (``resource`` for a
named object or a create, ``namespace``, ``cluster``), ``component``
(``apiserver``) and the answer's ``code``. Requests that name no resource
(discovery, health, ``/metrics`` itself) are not counted. ``GET /metrics``
answers to an authenticated user, and kube-apiserver's 403 to an anonymous
one.

The exposition is written as kube-apiserver's Go Prometheus client writes
it: the family's HELP text with its ``[STABLE]`` stability level, the
series' labels sorted by name, values as Go's ``strconv.FormatFloat(v, 'g',
-1, 64)`` prints them (``1``, ``12``, ``1e+06``), no ``_created`` series,
and the text format's ``version=0.0.4`` content type.
"""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal

from aiohttp import web

from ..machinery.request_info import ResourceRequest

__all__ = ["CONTENT_TYPE", "PATH", "RequestMetrics", "go_sample_value"]

PATH = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_NAME = "apiserver_request_total"
_HELP = ("[STABLE] Counter of apiserver requests broken out for each verb, dry run value, "
         "group, version, resource, scope, component, and HTTP response code.")
_LABELS = ("code", "component", "dry_run", "group", "resource", "scope", "subresource",
           "verb", "version")  # sorted by name, as Go's client writes them
_APPLY = "application/apply-patch+yaml"


class RequestMetrics:
    """One server's request counters and their text exposition."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, ...]] = Counter()  # label values in _LABELS order

    def count(self, request: web.Request, req: ResourceRequest, verb: str,
              code: int) -> None:
        """Count one answered request about ``req`` (``verb``: the server's own verb)."""
        r = req.rtype.resource
        scope = "resource" if req.name or verb == "create" else (
            "namespace" if req.namespace else "cluster")
        dry_run = ",".join(sorted(request.query.getall("dryRun", [])))
        self.requests[(str(code), "apiserver", dry_run, r.group, r.plural, scope,
                       req.subresource or "", _reported_verb(request, verb), r.version)] += 1

    def exposition(self) -> str:
        """The text format: HELP, TYPE and one line per series, in sorted label order."""
        lines = [f"# HELP {_NAME} {_HELP}", f"# TYPE {_NAME} counter"]
        for values in sorted(self.requests):
            labels = ",".join(f'{name}="{_escaped(value)}"'
                              for name, value in zip(_LABELS, values, strict=True))
            lines.append(f"{_NAME}{{{labels}}} {go_sample_value(self.requests[values])}")
        return "\n".join(lines) + "\n"

    def answer(self) -> web.Response:
        """The exposition (the authorizer decided who may read it)."""
        return web.Response(body=self.exposition().encode(),
                            headers={"Content-Type": CONTENT_TYPE})


def go_sample_value(value: float) -> str:
    """``value`` as Go's Prometheus client writes a sample: ``strconv.FormatFloat(value,
    'g', -1, 64)``, the shortest digits that read back as ``value``, in exponent form
    when the exponent is below -4 or from 6 on (``999999``, ``1e+06``, ``1.5e-05``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign, digit_tuple, exp = Decimal(repr(float(value))).normalize().as_tuple()
    assert isinstance(exp, int), "a finite float has an integer exponent"
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exp  # the decimal point's place after the first digit's
    exponent = point - 1
    minus = "-" if sign else ""
    if exponent < -4 or exponent >= 6:
        fraction = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{minus}{digits[0]}{fraction}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return minus + digits + "0" * (point - len(digits))
    return f"{minus}{digits[:point]}.{digits[point:]}"


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _reported_verb(request: web.Request, verb: str) -> str:
    if verb in ("list", "watch"):
        return verb.upper()
    if request.method == "PATCH" and request.headers.get(
            "Content-Type", "").split(";")[0].strip() == _APPLY:
        return "APPLY"
    return request.method.upper()
