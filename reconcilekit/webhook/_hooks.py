"""One registered admission webhook: its handler, what it matches, and its configuration entry.

A :class:`Hook` is what one entry of a Validating- or
MutatingWebhookConfiguration says (name, rules, policies), plus the handler
the server calls for it. The defaults are the safe ones: ``failurePolicy:
Fail`` (a request is refused rather than let through unchecked when the
webhook cannot answer), ``sideEffects: None`` (so dry-run requests are sent
too), ``matchPolicy: Equivalent``, a 10 s timeout.

``match_conditions`` are the entry's ``matchConditions``: CEL expressions
over ``request``, ``object`` and ``oldObject`` that the API server (v1.28 and
later) evaluates before calling; if any is false the webhook is not called.
:func:`exclude_users` writes the common one, a controller's own writes left
unreviewed. They spare the API server a call, nothing more: a handler must
still give the same answer when called (an API server that does not
evaluate them calls every time). Their names and shape are checked when the
webhook is registered; their CEL syntax too when the CEL package
(``common-expression-language``, which ``reconcilekit[testing]`` brings) is
installed, and otherwise by the API server, which refuses the configuration
with its message when it is installed (an operator's start-up).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .._foundations.cel_syntax import cel_compile
from .._foundations.go_compat import parse_duration
from .._foundations.objects import Obj, Resource
from .._foundations.selector_syntax import qualified_name_errors
from ._admission_review import OPERATIONS, AdmissionRequest, Verdict

__all__ = ["Defaulter", "Hook", "ServiceReference", "Validator", "exclude_users"]

Validator = Callable[[AdmissionRequest], Awaitable[Verdict]]
Defaulter = Callable[[AdmissionRequest], Awaitable[Obj | None]]
HookType = Literal["validating", "mutating"]

FAILURE_POLICIES: Final = ("Fail", "Ignore")
SIDE_EFFECTS: Final = ("None", "NoneOnDryRun")  # v1 refuses Some and Unknown
MAX_MATCH_CONDITIONS: Final = 64


def exclude_users(*usernames: str, operations: Collection[str] = (),
                  name: str = "exclude-users") -> dict[str, str]:
    """A match condition (``{name: expression}``) that leaves requests made by
    ``usernames`` unreviewed (only those of ``operations``, e.g. ``("UPDATE",)``, if
    given): a controller's own writes, which its webhook would allow anyway. Merge it
    into ``match_conditions``; the handler must still allow them when called."""
    if not usernames or not all(usernames):
        raise ValueError("exclude_users: name at least one user, none of them empty")
    bad = [op for op in operations if op not in OPERATIONS]
    if bad:
        raise ValueError(f"exclude_users: operations must be among {', '.join(OPERATIONS)}, "
                         f"not {bad}")

    def cel_list(items: Collection[str]) -> str:
        # A JSON string is a CEL string literal, but for its escaped surrogate pairs (a
        # character beyond U+FFFF, an emoji in an OIDC name): CEL takes it as it is.
        return "[" + ", ".join(json.dumps(item, ensure_ascii=False) for item in items) + "]"

    condition = f"request.userInfo.username in {cel_list(usernames)}"
    if operations:
        condition = f"request.operation in {cel_list(operations)} && {condition}"
    return {name: f"!({condition})"}


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
    match_conditions: Mapping[str, str] = field(default_factory=dict)
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
        self._check_match_conditions()

    def _check_match_conditions(self) -> None:
        """What the API server would refuse in ``matchConditions``, said before it does: the
        shape, names and empty expressions always; syntax only with the CEL package installed
        (without it the API server checks the syntax when the configuration is installed)."""
        if not isinstance(self.match_conditions, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str)
                for k, v in self.match_conditions.items()):
            raise ValueError(f"webhook {self.name}: match_conditions must map each "
                             f"condition's name to its CEL expression, both strings (e.g. "
                             f"{{'not-mine': \"request.userInfo.username != 'me'\"}}), "
                             f"not {self.match_conditions!r}")
        if len(self.match_conditions) > MAX_MATCH_CONDITIONS:
            raise ValueError(f"webhook {self.name}: at most {MAX_MATCH_CONDITIONS} "
                             f"match_conditions, not {len(self.match_conditions)}")
        for name, expression in self.match_conditions.items():
            if problems := qualified_name_errors(name):
                raise ValueError(f"webhook {self.name}: match condition name {name!r} must "
                                 f"be a qualified name: {'; '.join(problems)}")
            if not expression.strip():
                raise ValueError(f"webhook {self.name}: match condition {name!r} has no "
                                 f"expression")
            compile_ = cel_compile()
            if compile_ is None:
                continue
            try:
                compile_(expression)
            except ValueError as err:
                raise ValueError(f"webhook {self.name}: match condition {name!r} is not a "
                                 f"CEL expression: {str(err).partition(': ')[2] or err}"
                                 ) from None

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
        if self.match_conditions:
            entry["matchConditions"] = [{"name": name, "expression": expression}
                                        for name, expression in self.match_conditions.items()]
        if self.type == "mutating":
            entry["reinvocationPolicy"] = "Never"
        entry.update(self.extra)
        return entry

    def deadline(self, timeout_param: str | None) -> float:
        """Seconds the handler may take: inside the API server's timeout, with room for
        the answer to travel (it sends ``?timeout=10s``; the configuration's value otherwise)."""
        bound = float(self.timeout_seconds)
        seconds = parse_duration(timeout_param)
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
