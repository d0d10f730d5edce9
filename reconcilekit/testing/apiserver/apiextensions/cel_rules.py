"""``x-kubernetes-validations``: a CRD's CEL rules, evaluated with cel-rust
(PyPI ``common-expression-language``, whose parser and messages are cel-go's).

kube-apiserver 1.28's semantics, as a controller author relies on them:

* a rule is evaluated at every value its schema node matches, with ``self``
  bound to that value (``number`` fields are doubles even when the JSON has
  an integer, as kube's CEL types say);
* a rule that names ``oldSelf`` is a *transition rule*: evaluated only on an
  update, and only where the old object has a value that correlates (same
  property, same map key, same ``x-kubernetes-list-type: map`` key);
* a rule that is false gives its ``messageExpression`` (when it evaluates to a
  non-empty string), else its ``message``, else ``failed rule: RULE``, at the
  node's path plus ``fieldPath``, with its ``reason`` (FieldValueInvalid by
  default, shown as the node's type);
* a rule that fails to evaluate gives ``ERROR evaluating rule: MESSAGE-OR-RULE``.

Besides CEL's standard functions, rules may use the Kubernetes extension
libraries of 1.28: strings (``charAt``, ``indexOf``, ``lastIndexOf``,
``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``,
``trim``, ``join``), lists (``isSorted``, ``sum``, ``min``, ``max``,
``indexOf``, ``lastIndexOf``) and regex (``find``, ``findAll``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...._foundations.go_compat import go_quote
from ..machinery.status import Cause
from ..machinery.validation import invalid
from .schema_tree import child_schema, join_path, schema_nodes

__all__ = ["CELRules", "cel_error_text", "compile_error_text", "compile_errors",
           "undeclared_reference"]

# what CEL itself defines; a rule calling anything else (and not a library
# function below) does not compile, as on kube-apiserver
_STANDARD = frozenset({
    "size", "has", "matches", "contains", "startsWith", "endsWith", "int", "uint", "double",
    "string", "bytes", "bool", "duration", "timestamp", "type", "dyn", "all", "exists",
    "exists_one", "map", "filter", "getDate", "getDayOfMonth", "getDayOfWeek",
    "getDayOfYear", "getFullYear", "getHours", "getMilliseconds", "getMinutes", "getMonth",
    "getSeconds"})


def _string_index(s: str, sub: str, start: int = 0) -> int:
    return s.find(sub, start)


def _index_of(seq: Any, value: Any, *rest: Any) -> int:
    if isinstance(seq, str):
        return _string_index(seq, value, *rest)
    return next((i for i, v in enumerate(seq) if v == value), -1)


def _last_index(seq: Any, value: Any) -> int:
    if isinstance(seq, str):
        return seq.rfind(value)
    return max((i for i, v in enumerate(seq) if v == value), default=-1)


def _split(s: str, sep: str, limit: int = -1) -> list[str]:
    return s.split(sep) if limit < 0 else s.split(sep, limit - 1)


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, s)]
    return found if limit < 0 else found[:limit]


def _find(s: str, pattern: str) -> str:
    m = re.search(pattern, s)
    return m.group(0) if m else ""


def _ascii(convert: Callable[[str], str]) -> Callable[[str], str]:
    return lambda s: "".join(convert(c) if c.isascii() else c for c in s)


# Kubernetes' CEL libraries (k8s.io/apiserver/pkg/cel/library, 1.28)
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "charAt": lambda s, i: s[i:i + 1],
    "indexOf": _index_of,
    "lastIndexOf": _last_index,
    "lowerAscii": _ascii(str.lower),
    "upperAscii": _ascii(str.upper),
    "replace": lambda s, old, new, n=-1: s.replace(old, new, n),
    "split": _split,
    "substring": lambda s, start, end=None: s[start:end],
    "trim": str.strip,
    "join": lambda items, sep="": sep.join(items),
    "isSorted": lambda items: list(items) == sorted(items),
    "sum": lambda items: sum(items[1:], items[0]) if items else 0,
    "min": min,
    "max": max,
    "find": _find,
    "findAll": _find_all,
}
_KNOWN = _STANDARD | _FUNCTIONS.keys()


@dataclass(frozen=True, slots=True)
class _CompiledRule:
    rule: str
    message: str
    field_path: str
    reason: str
    transition: bool
    program: Any
    message_program: Any

    def error_string(self) -> str:
        return self.message.strip() or self.rule.strip()


def compile_error_text(err: ValueError) -> str:
    """cel-rust's compile error in cel-go's layout (``ERROR: <input>:1:5: ...`` and the
    expression with a caret under the place)."""
    return str(err).partition(": ")[2].replace("\n| ", "\n | ")


def undeclared_reference(text: str, name: str, column: int) -> str:
    """cel-go's error for ``name``, undeclared, at 0-based ``column`` of ``text``."""
    return (f"ERROR: <input>:1:{column + 1}: undeclared reference to '{name}' (in "
            f"container '')\n | {text}\n | {'.' * column}^")


def _compile_one(text: str) -> Any:
    """cel-rust's program for ``text``; ValueError (cel-go's message) if it does not compile."""
    import cel  # the testing extra's, imported when first needed (APIServer checks it is there)

    try:
        program = cel.compile(text)
    except ValueError as err:
        raise ValueError(compile_error_text(err)) from None
    for name in program.functions():
        if name.isidentifier() and not name.startswith("_") and name not in _KNOWN:
            # cel-go points at the call's parenthesis
            raise ValueError(undeclared_reference(text, name, text.find(f"{name}(") + len(name)))
    return program


def _compile(raw: Mapping[str, Any]) -> _CompiledRule:
    text = str(raw.get("rule", ""))
    expression = str(raw.get("messageExpression") or "")
    return _CompiledRule(text, str(raw.get("message") or ""), str(raw.get("fieldPath") or ""),
                         str(raw.get("reason") or "FieldValueInvalid"),
                         re.search(r"\boldSelf\b", text) is not None, _compile_one(text),
                         _compile_one(expression) if expression else None)


def compile_errors(schema: Mapping[str, Any], path: str) -> list[Cause]:
    """The rules of ``schema`` (an ``openAPIV3Schema`` at ``path``) that do not compile."""
    causes: list[Cause] = []
    for node_path, node in schema_nodes(schema, path):
        for i, raw in enumerate(node.get("x-kubernetes-validations") or ()):
            if not isinstance(raw, Mapping):
                continue
            for key in ("rule", "messageExpression"):
                if not raw.get(key):
                    continue
                try:
                    _compile_one(str(raw[key]))
                except ValueError as err:
                    causes.append(Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {_go_rule(raw)}: compilation failed: {err}",
                        f"{node_path}.x-kubernetes-validations[{i}].{key}"))
    return causes


def _go_rule(raw: Mapping[str, Any]) -> str:
    """An ``apiextensions.ValidationRule`` as Go's ``%#v`` shows it in CRD errors."""
    def text(key: str) -> str:
        return go_quote(str(raw.get(key) or ""))
    reason = ("(*apiextensions.FieldValueErrorReason)(nil)" if not raw.get("reason")
              else f"(*apiextensions.FieldValueErrorReason)({go_quote(str(raw['reason']))})")
    return (f"apiextensions.ValidationRule{{Rule:{text('rule')}, Message:{text('message')}, "
            f"MessageExpression:{text('messageExpression')}, Reason:{reason}, "
            f"FieldPath:{text('fieldPath')}}}")


def _cel(value: Any, node: Mapping[str, Any]) -> Any:
    """A JSON value as CEL sees it under ``node`` (numbers are doubles)."""
    if node.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, dict):
        return {k: _cel(v, child_schema(node, k) or {}) for k, v in value.items()}
    if isinstance(value, list):
        items = node.get("items")
        return [_cel(v, items if isinstance(items, Mapping) else {}) for v in value]
    return value


def cel_error_text(err: Exception) -> str:
    """A rule's runtime error in cel-go's words where they differ."""
    if isinstance(err, KeyError):
        return f"no such key: {err.args[0] if err.args else ''}"
    if isinstance(err, ZeroDivisionError):
        return "division by zero"
    text = str(err).split(". ")[0].split(": ")[0]
    return text[:1].lower() + text[1:]


class CELRules:
    """Every ``x-kubernetes-validations`` rule of one schema, compiled on first use."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self._compiled: dict[int, list[_CompiledRule]] = {}

    @functools.cached_property
    def has_rules(self) -> bool:
        """Whether the schema has a rule anywhere (kube-apiserver then has a CEL
        validator, and says when invalid fields kept it from running)."""
        return any(node.get("x-kubernetes-validations")
                   for _, node in schema_nodes(self.schema, ""))

    def _rules(self, node: Mapping[str, Any]) -> list[_CompiledRule]:
        rules = self._compiled.get(id(node))
        if rules is None:
            rules = [_compile(r) for r in node.get("x-kubernetes-validations") or ()
                     if isinstance(r, Mapping)]
            self._compiled[id(node)] = rules
        return rules

    def evaluate(self, obj: Any, old: Any | None) -> list[Cause]:
        """The causes of every rule that does not hold on ``obj`` (``old``: before an update)."""
        causes: list[Cause] = []
        self._walk(obj, old, old is not None, self.schema, "", causes)
        return causes

    def _walk(self, value: Any, old: Any, has_old: bool, node: Mapping[str, Any], path: str,
              causes: list[Cause]) -> None:
        for rule in self._rules(node):
            if rule.transition and not has_old:
                continue
            causes.extend(self._check(rule, value, old, node, path))
        if isinstance(value, dict):
            for key, child_value in value.items():
                child = child_schema(node, key)
                if child is not None:
                    correlated = has_old and isinstance(old, dict) and key in old
                    self._walk(child_value, old.get(key) if correlated else None, correlated,
                               child, join_path(path, key), causes)
        elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
            keys = node.get("x-kubernetes-list-map-keys") or ()
            by_key = {}
            if has_old and node.get("x-kubernetes-list-type") == "map" and isinstance(old, list):
                by_key = {tuple(o.get(k) for k in keys): o for o in old if isinstance(o, dict)}
            for i, item in enumerate(value):
                key = tuple(item.get(k) for k in keys) if isinstance(item, dict) else None
                correlated = key is not None and key in by_key
                self._walk(item, by_key.get(key) if correlated and key else None, correlated,
                           node["items"], join_path(path, i), causes)

    def _check(self, rule: _CompiledRule, value: Any, old: Any, node: Mapping[str, Any],
               path: str) -> list[Cause]:
        variables = {"self": _cel(value, node)}
        if rule.transition:
            variables["oldSelf"] = _cel(old, node)
        import cel

        context = cel.Context(variables=variables, functions=_FUNCTIONS)
        shown_type = str(node.get("type") or "")
        field = (path + rule.field_path if path else rule.field_path.lstrip(".")
                 ) if rule.field_path else path
        try:
            result = rule.program.execute(context)
        except Exception as err:  # a rule's runtime error is its answer
            return [invalid(field, shown_type,
                            f"{cel_error_text(err)} evaluating rule: {rule.error_string()}")]
        if result is True:
            return []
        detail = rule.message.strip() or f"failed rule: {rule.rule.strip()}"
        if rule.message_program is not None:
            try:
                text = rule.message_program.execute(context)
            except Exception:  # kube-apiserver falls back to the message
                text = None
            if isinstance(text, str) and text.strip():
                detail = text.strip()
        match rule.reason:
            case "FieldValueForbidden":
                return [Cause(rule.reason, f"Forbidden: {detail}", field)]
            case "FieldValueRequired":
                return [Cause(rule.reason, f"Required value: {detail}", field)]
            case "FieldValueDuplicate":
                return [Cause(rule.reason, f'Duplicate value: "{shown_type}"', field)]
        return [invalid(field, shown_type, detail)]
