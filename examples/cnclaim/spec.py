"""What a CNClaim's spec must look like for the claim controller to act on it.

The CRD's schema refuses most malformed claims at the API server, but not
everything the code relies on (label syntax, ``In`` without values), and an
API server that does not validate (an old one, or a test double) lets
anything through. :func:`spec_problem` names the first problem in plain
words, with the field; the controller then records a Warning Event and stops
retrying (a :class:`reconcilekit.TerminalError`) instead of failing the same
way forever.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconcilekit import LabelSelector, SelectorError

__all__ = ["spec_problem"]

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _type_problem(value: Any, field: str, kind: type, name: str) -> str | None:
    if value is not None and not isinstance(value, kind):
        return f"{field} must be {name}, not {type(value).__name__}"
    return None


def spec_problem(claim: Mapping[str, Any]) -> str | None:
    """The first reason ``claim``'s spec cannot be acted on, naming the field; None if fine."""
    spec = claim.get("spec")
    if not isinstance(spec, Mapping):
        return f"spec must be an object, not {type(spec).__name__}"
    for field in ("poolName", "podName", "nodeName"):
        problem = _type_problem(spec.get(field), f"spec.{field}", str, "a string")
        if problem:
            return problem
    source = spec.get("sourcePod")
    problem = _type_problem(source, "spec.sourcePod", Mapping, "an object")
    if problem:
        return problem
    for field in ("podName", "nodeName"):
        problem = _type_problem((source or {}).get(field), f"spec.sourcePod.{field}", str,
                                "a string")
        if problem:
            return problem
    selector = spec.get("selector")
    if selector is not None:
        problem = _selector_problem(selector)
        if problem:
            return problem
    if not spec.get("poolName") and not selector:
        return "spec.poolName or spec.selector is required"
    return None


def _selector_problem(selector: Any) -> str | None:
    if not isinstance(selector, Mapping):
        return f"spec.selector must be an object, not {type(selector).__name__}"
    labels = selector.get("matchLabels")
    problem = _type_problem(labels, "spec.selector.matchLabels", Mapping, "an object")
    if problem:
        return problem
    terms: list[tuple[str, str]] = []  # (field, the term in label selector syntax)
    for key, value in (labels or {}).items():
        if not isinstance(value, str):
            return f"spec.selector.matchLabels.{key} must be a string"
        terms.append((f"spec.selector.matchLabels.{key}", f"{key}={value}"))
    expressions = selector.get("matchExpressions")
    problem = _type_problem(expressions, "spec.selector.matchExpressions", list, "a list")
    if problem:
        return problem
    for i, expr in enumerate(expressions or ()):
        field = f"spec.selector.matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            return f"{field} must be an object"
        key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values")
        if not isinstance(key, str) or not key:
            return f"{field}.key is required"
        if operator not in _OPERATORS:
            return f"{field}.operator: unsupported value {operator!r}: supported values: " + (
                ", ".join(_OPERATORS))
        if values is not None and not (isinstance(values, list)
                                       and all(isinstance(v, str) for v in values)):
            return f"{field}.values must be a list of strings"
        if operator in ("In", "NotIn") and not values:
            return f"{field}.values: must be specified when operator is {operator}"
        if operator in ("Exists", "DoesNotExist") and values:
            return f"{field}.values: may not be specified when operator is {operator}"
        terms.append((field, key if operator == "Exists" else f"!{key}"
                       if operator == "DoesNotExist"
                       else f"{key} {operator.lower()} ({','.join(values or ())})"))
    for field, term in terms:  # label key and value syntax, as the API server checks them
        try:
            LabelSelector.parse(term)
        except SelectorError as err:
            return f"{field}: {err}"
    return None
