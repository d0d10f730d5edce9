"""admissionregistration.k8s.io/v1 Validating- and MutatingWebhookConfigurations.

What kube-apiserver does with these objects before admission uses them:

* :class:`WebhookConfigurationStrategy`, the kinds' strategy, registered in
  the server's strategy table by :func:`register_strategies`:
* :func:`default_configuration`: the v1 defaults (``failurePolicy: Fail``,
  ``matchPolicy: Equivalent``, empty selectors, ``timeoutSeconds: 10``,
  ``reinvocationPolicy: Never``, rule ``scope: "*"``; service ``port: 443``);
* ``caBundle`` is base64 (refused at decoding, 400);
* :func:`configuration_errors`: the v1 validation
  (``pkg/apis/admissionregistration/validation``) of what users commonly get
  wrong: fully qualified hook names, unique per configuration; rules
  (operations, wildcards, subresources, scope); the enums; ``sideEffects``
  required and ``None`` or ``NoneOnDryRun``; ``timeoutSeconds`` 1 to 30;
  label selectors; exactly one of ``url`` (https, no query, fragment or user)
  and ``service``; ``admissionReviewVersions`` naming v1 or v1beta1;
  ``matchConditions`` (:mod:`.match_conditions`).

:func:`webhooks` reads a stored configuration into :class:`Webhook` values
that :mod:`.chain` dispatches to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...._foundations.go_compat import go_quote
from ...._foundations.selectors import LabelSelector, SelectorError
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import (
    dns_subdomain_errors,
    invalid,
    invalid_slice,
    label_value_errors,
    qualified_name_errors,
    required,
)
from ..registry.group_printers import webhook_configuration_cells
from ..registry.strategy import Strategy, StrategyTable
from ..webhook_client.client_config_validation import (
    check_ca_bundle,
    client_config_errors,
    default_client_config,
    review_version_errors,
)
from ..webhook_client.https_client import ClientConfig
from .match_conditions import MatchCondition, match_condition_errors, match_conditions

__all__ = ["GROUP", "RuleWithOperations", "Webhook", "WebhookConfigurationStrategy",
           "configuration_errors", "default_configuration", "register_strategies", "webhooks"]

GROUP = "admissionregistration.k8s.io"
MUTATING = "mutatingwebhookconfigurations"
VALIDATING = "validatingwebhookconfigurations"
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")



def _client_configs(obj: Obj) -> list[Obj]:
    """The ``clientConfig`` objects of a configuration's webhooks."""
    configs = [h.get("clientConfig") for h in obj.get("webhooks") or () if isinstance(h, dict)]
    return [c for c in configs if isinstance(c, dict)]


class WebhookConfigurationStrategy(Strategy):
    """A Validating- or MutatingWebhookConfiguration's strategy (``mutating``)."""

    def __init__(self, *, mutating: bool) -> None:
        super().__init__(cells=webhook_configuration_cells)
        self.mutating = mutating

    def check_encoding(self, obj: Obj) -> None:
        """Each ``clientConfig.caBundle`` decodes as Go's []byte."""
        for config in _client_configs(obj):
            check_ca_bundle(config)

    def default(self, obj: Obj) -> None:
        default_configuration(obj, mutating=self.mutating)
        for config in _client_configs(obj):
            default_client_config(config)

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        return configuration_errors(obj, mutating=self.mutating)


def register_strategies(table: StrategyTable) -> None:
    """Register both kinds of webhook configuration in ``table``."""
    table.register(GROUP, MUTATING, WebhookConfigurationStrategy(mutating=True))
    table.register(GROUP, VALIDATING, WebhookConfigurationStrategy(mutating=False))


def default_configuration(obj: Obj, *, mutating: bool) -> None:
    """The v1 defaults of every webhook of a configuration, in place."""
    for hook in obj.get("webhooks") or ():
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        for selector in ("namespaceSelector", "objectSelector"):
            if hook.get(selector) is None:
                hook[selector] = {}
        hook.setdefault("timeoutSeconds", 10)
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or ():
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


# -- validation ------------------------------------------------------------------------



def _not_supported(field: str, value: Any, supported: tuple[str, ...]) -> Cause:
    return Cause("FieldValueNotSupported", f"Unsupported value: {go_quote(str(value))}: "
                 "supported values: " + ", ".join(go_quote(s) for s in supported), field)



def configuration_errors(obj: Obj, *, mutating: bool) -> list[Cause]:
    """Why kube-apiserver would refuse this configuration (422), beyond its metadata."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, hook in enumerate(obj.get("webhooks") or ()):
        path = f"webhooks[{i}]"
        if not isinstance(hook, dict):
            causes.append(required(path))
            continue
        causes.extend(_hook_errors(hook, path, mutating))
        causes.extend(review_version_errors(hook.get("admissionReviewVersions"),
                                            f"{path}.admissionReviewVersions"))
        name = hook.get("name")
        if isinstance(name, str) and name:
            if name in names:
                causes.append(Cause("FieldValueDuplicate", f"Duplicate value: {go_quote(name)}",
                                    f"{path}.name"))
            names.add(name)
    return causes


def _hook_errors(hook: Obj, path: str, mutating: bool) -> list[Cause]:
    causes = _fully_qualified_name_errors(hook.get("name"), f"{path}.name")
    for j, rule in enumerate(hook.get("rules") or ()):
        causes.extend(_rule_errors(rule if isinstance(rule, dict) else {},
                                   f"{path}.rules[{j}]"))
    for field, supported in (("failurePolicy", ("Fail", "Ignore")),
                             ("matchPolicy", ("Equivalent", "Exact"))):
        if hook.get(field) is not None and hook[field] not in supported:
            causes.append(_not_supported(f"{path}.{field}", hook[field], supported))
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        causes.append(required(f"{path}.sideEffects", "must specify one of None, NoneOnDryRun"))
    elif side_effects not in _NO_SIDE_EFFECTS:
        causes.append(_not_supported(f"{path}.sideEffects", side_effects, _NO_SIDE_EFFECTS))
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        causes.append(invalid(f"{path}.timeoutSeconds", timeout,
                              "the timeout value must be between 1 and 30 seconds"))
    for selector in ("namespaceSelector", "objectSelector"):
        if isinstance(hook.get(selector), dict):
            causes.extend(_selector_errors(hook[selector], f"{path}.{selector}"))
    policy = hook.get("reinvocationPolicy")
    if mutating and policy is not None and policy not in ("IfNeeded", "Never"):
        causes.append(_not_supported(f"{path}.reinvocationPolicy", policy, ("IfNeeded", "Never")))
    causes.extend(client_config_errors(hook.get("clientConfig"), f"{path}.clientConfig",
                                       url_field="url"))
    causes.extend(match_condition_errors(hook.get("matchConditions"),
                                         f"{path}.matchConditions"))
    return causes


def _fully_qualified_name_errors(name: Any, field: str) -> list[Cause]:
    """``IsFullyQualifiedName``: a DNS subdomain of at least three segments."""
    if not isinstance(name, str) or not name:
        return [required(field)]
    errors = dns_subdomain_errors(name)
    if errors:
        return [invalid(field, name, ",".join(errors))]
    if len(name.split(".")) < 3:
        return [invalid(field, name, "should be a domain with at least three segments "
                                     "separated by dots")]
    return []


def _rule_errors(rule: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    operations = rule.get("operations") or []
    if not operations:
        causes.append(required(f"{path}.operations"))
    if len(operations) > 1 and "*" in operations:
        causes.append(invalid_slice(f"{path}.operations", operations,
                                    "if '*' is present, must not specify other operations",
                                    "admissionregistration.OperationType"))
    for k, operation in enumerate(operations):
        if operation not in _OPERATIONS:
            causes.append(_not_supported(f"{path}.operations[{k}]", operation, _OPERATIONS))
    groups = rule.get("apiGroups") or []
    if not groups:
        causes.append(required(f"{path}.apiGroups"))
    if len(groups) > 1 and "*" in groups:
        causes.append(invalid_slice(f"{path}.apiGroups", groups,
                                    "if '*' is present, must not specify other API groups"))
    versions = rule.get("apiVersions") or []
    if not versions:
        causes.append(required(f"{path}.apiVersions"))
    if len(versions) > 1 and "*" in versions:
        causes.append(invalid_slice(f"{path}.apiVersions", versions,
                                    "if '*' is present, must not specify other API versions"))
    causes.extend(required(f"{path}.apiVersions[{k}]")
                  for k, version in enumerate(versions) if version == "")
    causes.extend(_resource_errors(rule.get("resources") or [], f"{path}.resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        causes.append(_not_supported(f"{path}.scope", scope, _SCOPES))
    return causes



def _resource_errors(resources: list[Any], path: str) -> list[Cause]:
    """``validateResources``: ``x/*`` and ``*/x`` exclude more specific entries."""
    causes: list[Cause] = []
    if not resources:
        causes.append(required(path))
    with_any_sub: set[str] = set()
    with_any_res: set[str] = set()
    single_wildcard = plain = False
    for k, entry in enumerate(resources):
        if entry == "":
            causes.append(required(f"{path}[{k}]"))
            continue
        if entry == "*":
            single_wildcard = True
        res, slash, sub = str(entry).partition("/")
        if not slash:
            plain = entry != "*"
            continue
        if res in with_any_sub:
            causes.append(invalid(f"{path}[{k}]", entry,
                                  f"if '{res}/*' is present, must not specify {entry}"))
        if sub in with_any_res:
            causes.append(invalid(f"{path}[{k}]", entry,
                                  f"if '*/{sub}' is present, must not specify {entry}"))
        if sub == "*":
            with_any_sub.add(res)
        if res == "*":
            with_any_res.add(sub)
    if len(resources) > 1 and "*/*" in resources:
        causes.append(invalid_slice(path, resources,
                                    "if '*/*' is present, must not specify other resources"))
    if single_wildcard and plain:
        causes.append(invalid_slice(path, resources, "if '*' is present, must not specify "
                                                      "other resources without subresources"))
    return causes


def _selector_errors(selector: Obj, path: str) -> list[Cause]:
    """``ValidateLabelSelector``: keys, values and operators."""
    causes: list[Cause] = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        causes.extend(invalid(f"{path}.matchLabels", key, m) for m in qualified_name_errors(key))
        causes.extend(invalid(f"{path}.matchLabels", value, m)
                      for m in label_value_errors(str(value)))
    for i, expr in enumerate(selector.get("matchExpressions") or ()):
        where = f"{path}.matchExpressions[{i}]"
        expr = expr if isinstance(expr, dict) else {}
        operator, values = expr.get("operator"), expr.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                causes.append(required(f"{where}.values", "must be specified when `operator` "
                                                           "is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append(Cause("FieldValueForbidden", "Forbidden: may not be specified "
                                    "when `operator` is 'Exists' or 'DoesNotExist'",
                                    f"{where}.values"))
        else:
            causes.append(invalid(f"{where}.operator", str(operator or ""),
                                  "not a valid selector operator"))
        key = str(expr.get("key") or "")
        causes.extend(invalid(f"{where}.key", key, m) for m in qualified_name_errors(key))
        for k, value in enumerate(values):
            causes.extend(invalid(f"{where}.values[{k}]", value, m)
                          for m in label_value_errors(str(value)))
    return causes






# -- the webhooks admission calls --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleWithOperations:
    """A ``RuleWithOperations`` of a webhook (admissionregistration's name for it)."""

    operations: tuple[str, ...]
    groups: tuple[str, ...]
    versions: tuple[str, ...]
    resources: tuple[str, ...]
    scope: str

    def matches(self, operation: str, group: str, version: str, resource: str,
                subresource: str, namespaced: bool) -> bool:
        """``rules.Matcher``: scope, operation, group, version, then resource/subresource
        (``*`` is every resource but no subresource; ``x/*`` is x and its subresources).

        ``namespaced``: the request is on an object in a namespace (a Namespace itself
        is not in one)."""
        if self.scope == "Namespaced" and not namespaced:
            return False
        if self.scope == "Cluster" and namespaced:
            return False
        if not ({"*", operation} & set(self.operations) and {"*", group} & set(self.groups)
                and {"*", version} & set(self.versions)):
            return False
        for entry in self.resources:
            res, _, sub = entry.partition("/")
            if res in ("*", resource) and sub in ("*", subresource):
                return True
        return False


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook of a stored configuration, as admission dispatches to it."""

    configuration: str
    name: str
    mutating: bool
    client: ClientConfig
    rules: tuple[RuleWithOperations, ...]
    failure_policy: str
    match_policy: str
    namespace_selector: LabelSelector
    object_selector: LabelSelector
    side_effects: str | None
    timeout: int
    review_versions: tuple[str, ...]
    reinvocation: str
    conditions: tuple[MatchCondition, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.configuration, self.name)


def webhooks(configuration: Mapping[str, Any], *, mutating: bool) -> list[Webhook]:
    """The webhooks of a stored (defaulted, validated) configuration, in order."""
    out = []
    for hook in configuration.get("webhooks") or ():
        try:
            namespaces = LabelSelector.from_dict(hook.get("namespaceSelector") or {})
            objects = LabelSelector.from_dict(hook.get("objectSelector") or {})
        except SelectorError:
            continue  # refused at validation; a stored one cannot be
        out.append(Webhook(
            configuration["metadata"]["name"], hook["name"], mutating,
            ClientConfig.parse(hook.get("clientConfig") or {}),
            tuple(RuleWithOperations(tuple(r.get("operations") or ()),
                                     tuple(r.get("apiGroups") or ()),
                                     tuple(r.get("apiVersions") or ()),
                                     tuple(r.get("resources") or ()),
                                     r.get("scope") or "*") for r in hook.get("rules") or ()),
            hook.get("failurePolicy") or "Fail", hook.get("matchPolicy") or "Equivalent",
            namespaces, objects, hook.get("sideEffects"), int(hook.get("timeoutSeconds") or 10),
            tuple(hook.get("admissionReviewVersions") or ()),
            hook.get("reinvocationPolicy") or "Never",
            match_conditions(hook.get("matchConditions"))))
    return out
