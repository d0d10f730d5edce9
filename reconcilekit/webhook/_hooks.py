"""One registered admission webhook: its handler, what it matches, and its configuration entry.

A :class:`Hook` is what one entry of a Validating- or
MutatingWebhookConfiguration says (name, rules, policies), plus the handler
the server calls for it. The defaults are the safe ones: ``failurePolicy:
Fail`` (a request is refused rather than let through unchecked when the
webhook cannot answer), ``sideEffects: None`` (so dry-run requests are sent
too), ``matchPolicy: Equivalent``, a 10 s timeout.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .._objects import Resource
from ._admission import OPERATIONS, AdmissionRequest, Obj, Verdict

__all__ = ["Defaulter", "Hook", "ServiceReference", "Validator"]

Validator = Callable[[AdmissionRequest], Awaitable[Verdict]]
Defaulter = Callable[[AdmissionRequest], Awaitable[Obj | None]]
HookType = Literal["validating", "mutating"]

FAILURE_POLICIES: Final = ("Fail", "Ignore")
SIDE_EFFECTS: Final = ("None", "NoneOnDryRun")  # v1 refuses Some and Unknown


@dataclass(frozen=True, slots=True)
class ServiceReference:
    """How a cluster's API server reaches the webhook server: a Service in front of it."""

    namespace: str
    name: str
    port: int = 443

    @property
    def hosts(self) -> tuple[str, ...]:
        """The DNS names the serving certificate must carry."""
        base = f"{self.name}.{self.namespace}.svc"
        return base, f"{base}.cluster.local"


@dataclass(frozen=True, slots=True)
class Hook:
    """An admission webhook: ``type``, its handler and its configuration entry's fields."""

    type: HookType
    name: str
    path: str
    resource: Resource
    handler: Validator | Defaulter
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    sub_resources: tuple[str, ...] = ()
    failure_policy: str = "Fail"
    side_effects: str = "None"
    timeout_seconds: int = 10
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = [op for op in self.operations if op not in (*OPERATIONS, "*")]
        if not self.operations or bad:
            raise ValueError(f"webhook {self.name}: operations must be among "
                             f"{', '.join(OPERATIONS)} or '*', not {list(self.operations)}")
        if self.failure_policy not in FAILURE_POLICIES:
            raise ValueError(f"webhook {self.name}: failure_policy must be Fail or Ignore, "
                             f"not {self.failure_policy!r}")
        if self.side_effects not in SIDE_EFFECTS:
            raise ValueError(f"webhook {self.name}: side_effects must be None or "
                             f"NoneOnDryRun (admissionregistration.k8s.io/v1 refuses others), "
                             f"not {self.side_effects!r}")
        if not 1 <= self.timeout_seconds <= 30:
            raise ValueError(f"webhook {self.name}: timeout_seconds must be 1 to 30 (the API "
                             f"server's bounds), not {self.timeout_seconds}")
        segments = self.name.split(".")
        if len(segments) < 3 or not all(segments):
            raise ValueError(f"webhook name {self.name!r} must be a domain name of at least "
                             f"three segments (e.g. 'validate.widgets.example.com'), as the "
                             f"API server requires")
        if not self.path.startswith("/"):
            raise ValueError(f"webhook {self.name}: path {self.path!r} must start with '/'")

    def entry(self, client_config: Mapping[str, Any]) -> Obj:
        """This webhook's entry in its configuration's ``webhooks`` list."""
        resources = [self.resource.plural] + [f"{self.resource.plural}/{s}"
                                              for s in self.sub_resources]
        entry: Obj = {
            "name": self.name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": dict(client_config),
            "rules": [{"apiGroups": [self.resource.group],
                       "apiVersions": [self.resource.version],
                       "resources": resources,
                       "operations": list(self.operations),
                       "scope": "Namespaced" if self.resource.namespaced else "Cluster"}],
            "failurePolicy": self.failure_policy,
            "sideEffects": self.side_effects,
            "timeoutSeconds": self.timeout_seconds,
            "matchPolicy": "Equivalent",
        }
        if self.namespace_selector is not None:
            entry["namespaceSelector"] = dict(self.namespace_selector)
        if self.object_selector is not None:
            entry["objectSelector"] = dict(self.object_selector)
        if self.type == "mutating":
            entry["reinvocationPolicy"] = "Never"
        entry.update(self.extra)
        return entry

    def deadline(self, timeout_param: str | None) -> float:
        """Seconds the handler may take: inside the API server's timeout, with room for
        the answer to travel (it sends ``?timeout=10s``; the configuration's value otherwise)."""
        bound = float(self.timeout_seconds)
        seconds = _duration(timeout_param)
        if seconds is not None:
            bound = min(bound, seconds)
        return max(bound - 1.0, bound * 0.5)


def default_name(kind: str, resource: Resource) -> str:
    """``validate.widgets.example.com``; core and one-word groups need a name given."""
    if "." not in resource.group:
        raise ValueError(f"a webhook for {resource.group_resource} needs name=: the API "
                         f"server wants a name of three or more segments, e.g. "
                         f"'{kind}.{resource.plural}.example.com'")
    return f"{kind}.{resource.plural}.{resource.group}"


def default_path(kind: str, resource: Resource) -> str:
    """``/validate-example-com-v1-widget``, as controller-runtime's builder names them."""
    group = resource.group.replace(".", "-") or "core"
    return f"/{kind}-{group}-{resource.version}-{resource.kind.lower()}"


def ca_bundle_field(ca: bytes | None) -> dict[str, str]:
    return {"caBundle": base64.b64encode(ca).decode()} if ca else {}


def _duration(text: str | None) -> float | None:
    """``10s``, ``1m30s``, ``500ms`` (Go durations, as the API server writes them)."""
    if not text:
        return None
    total, number = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    i = 0
    try:
        while i < len(text):
            if text[i].isdigit() or text[i] == ".":
                number += text[i]
                i += 1
                continue
            unit = next(u for u in ("ms", "us", "µs", "ns", "h", "m", "s")
                        if text.startswith(u, i))
            total += float(number) * units[unit]
            number, i = "", i + len(unit)
    except (StopIteration, ValueError):
        return None
    return total if not number and total > 0 else None
