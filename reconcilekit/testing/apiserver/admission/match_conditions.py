"""A webhook's ``matchConditions``: checked when its configuration is written, evaluated
before each call, as kube-apiserver 1.28 does (AdmissionWebhookMatchConditions, beta and on).

* Validation (422 on the configuration): at most 64; each needs a name, a
  qualified name unique within its webhook, and an expression that compiles
  and names no variable but ``request``, ``object``, ``oldObject`` and
  ``authorizer``.
* Evaluation, after the rules and selectors matched: each expression sees
  ``object`` and ``oldObject`` (null where the operation has none) in the
  version the webhook is called with, and ``request``, the AdmissionRequest
  without its objects. If any condition is false the webhook is not called;
  otherwise, if any failed to evaluate, ``failurePolicy: Fail`` refuses the
  request (403, naming the errors) and ``Ignore`` skips the webhook; else it is
  called.

Not here: the ``authorizer`` variable (an expression naming it fails to
evaluate, so it counts as an error above), the cost budget, and type
checking: kube-apiserver refuses an expression that is not boolean or names a
field ``request`` does not have when the configuration is written; here it
fails at evaluation. Runtime errors on a null (``oldObject`` of a create) are
worded differently.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...._foundations.cel_syntax import Kind, Node, parse
from ..apiextensions.cel_rules import cel_error_text, compile_error_text, undeclared_reference
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import invalid, qualified_name_errors

__all__ = ["MatchCondition", "MatchOutcome", "evaluate", "match_condition_errors",
           "match_conditions"]

MAX_MATCH_CONDITIONS = 64
_VARIABLES = frozenset({"request", "object", "oldObject", "authorizer"})
# the comprehension macros: ``target.exists(g, predicate)`` declares ``g`` in its predicate
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})


@dataclass(frozen=True, slots=True)
class MatchCondition:
    name: str
    expression: str


@dataclass(frozen=True, slots=True)
class MatchOutcome:
    """Whether to call the webhook; ``error`` (why the request is refused) when not decided."""

    call: bool
    error: str | None = None


@functools.lru_cache(maxsize=1024)
def _program(expression: str) -> Any:
    import cel  # the testing extra's, imported when first needed (APIServer checks it is there)

    return cel.compile(expression)


def _compile_error(expression: str) -> str | None:
    """cel-go's compile error for ``expression``, or None."""
    try:
        program = _program(expression)
    except ValueError as err:
        return compile_error_text(err)
    free = _free_variables(parse(expression)) if program.variables() else set()
    for name in sorted(free):
        if name not in _VARIABLES:
            column = next((m.start() for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\b",
                                                          expression)), 0)
            return undeclared_reference(expression, name, column)
    return None


def _free_variables(node: Node, bound: frozenset[str] = frozenset()) -> set[str]:
    """The identifiers ``node`` reads that no comprehension macro around them declares
    (cel's ``variables()`` lists a macro's own variable with them)."""
    if node.kind is Kind.IDENT:
        return set() if node.name in bound else {node.name}
    free = set() if node.target is None else _free_variables(node.target, bound)
    args = node.args
    if (node.kind is Kind.CALL and node.name in _MACROS and node.target is not None
        and args and args[0].kind is Kind.IDENT):
        bound, args = bound | {args[0].name}, args[1:]
    for arg in args:
        free |= _free_variables(arg, bound)
    return free


def match_condition_errors(conditions: Any, path: str) -> list[Cause]:
    """Why kube-apiserver would refuse a webhook's ``matchConditions`` at ``path``."""
    if not isinstance(conditions, list):
        return []
    causes: list[Cause] = []
    if len(conditions) > MAX_MATCH_CONDITIONS:
        causes.append(Cause("FieldValueTooMany", f"Too many: {len(conditions)}: must have at "
                            f"most {MAX_MATCH_CONDITIONS} items", path))
    names: set[str] = set()
    for i, condition in enumerate(conditions):
        at = f"{path}[{i}]"
        condition = condition if isinstance(condition, Mapping) else {}
        expression = str(condition.get("expression") or "").strip()
        if not expression:
            causes.append(Cause("FieldValueRequired", "Required value", f"{at}.expression"))
        elif (problem := _compile_error(expression)) is not None:
            causes.append(invalid(f"{at}.expression", expression,
                                  f"compilation failed: {problem}"))
        name = str(condition.get("name") or "")
        if not name:
            causes.append(Cause("FieldValueRequired", "Required value", f"{at}.name"))
            continue
        causes.extend(invalid(f"{at}.name", name, detail)
                      for detail in qualified_name_errors(name))
        if name in names:
            causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{name}"',
                                f"{at}.name"))
        names.add(name)
    return causes


def match_conditions(raw: Any) -> tuple[MatchCondition, ...]:
    """A stored (validated) webhook's ``matchConditions``."""
    return tuple(MatchCondition(str(c.get("name")), str(c.get("expression")).strip())
                 for c in raw or () if isinstance(c, Mapping))


def evaluate(conditions: Sequence[MatchCondition], failure_policy: str, request: Obj,
             obj: Obj | None, old: Obj | None) -> MatchOutcome:
    """``matcher.Match``: false anywhere skips; errors then follow the failure policy."""
    if not conditions:
        return MatchOutcome(True)
    review = {k: v for k, v in request.items() if k not in ("object", "oldObject")}
    import cel

    context = cel.Context(variables={"request": review, "object": obj, "oldObject": old})
    errors = []
    for condition in conditions:
        try:
            result = _program(condition.expression).execute(context)
        except Exception as err:  # an expression's runtime error is an outcome of its own
            errors.append(f"expression '{condition.expression}' resulted in error: "
                          f"{cel_error_text(err)}")
            continue
        if result is False:
            return MatchOutcome(False)
        if result is not True:
            errors.append(f"expression '{condition.expression}' resulted in error: "
                          f"no such overload")
    if not errors:
        return MatchOutcome(True)
    if failure_policy == "Ignore":
        return MatchOutcome(False)
    return MatchOutcome(False, errors[0] if len(errors) == 1 else
                        "[" + ", ".join(errors) + "]")
