"""Kubernetes label and field selectors: parsing, validation, matching.

Both kinds behave like kube-apiserver's (k8s.io/apimachinery ``pkg/labels``
and ``pkg/fields``): the same grammar, the same validation, the same error
messages, the same canonical string form. The API server in
``reconcilekit.testing`` turns a :class:`SelectorError` into a 400 BadRequest
whose message is ``str(error)``; the client-side cache uses
:meth:`LabelSelector.equality_requirements` to narrow lookups through an index.

Selectors are immutable and precompiled: ``matches`` runs once per object per
watch event, so it does no parsing, no allocation beyond a dict lookup per
requirement, and stops at the first requirement that fails.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from .go_compat import go_quote, parse_int64
from .selector_syntax import (
    ORDERED_OPERATORS,
    POSITIVE_OPERATORS,
    SET_OPERATORS,
    UNARY_OPERATORS,
    Operator,
    SelectorError,
    escape_field_value,
    parse_field_selector,
    parse_label_selector,
    requirement_error,
    to_operator,
)

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Operator",
    "Requirement",
    "SelectorError",
]

_LabelCheck = Callable[[Mapping[str, str]], bool]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term of a label selector: ``key``, ``operator`` and ``values``.

    Construction validates like apimachinery's ``NewRequirement`` and raises
    :class:`SelectorError` with its message: the key must be a valid label key,
    ``in``/``notin`` need at least one value, ``=``/``==``/``!=``/``gt``/``lt``
    exactly one, ``exists``/``!`` none, ``gt``/``lt`` an integer, and every
    value must be a valid label value (the empty string is one).

    ``values`` is stored sorted and without duplicates, the order in which
    apimachinery prints them; matching does not depend on it.
    """

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        operator = to_operator(self.operator)
        values = tuple(self.values)
        if error := requirement_error(self.key, operator, values):
            raise SelectorError(error)
        object.__setattr__(self, "operator", operator)
        object.__setattr__(self, "values", tuple(sorted(set(values))))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfies this requirement.

        ``in``, ``=`` and ``==`` need the key present with one of the values;
        ``notin`` and ``!=`` are satisfied by an absent key; ``gt``/``lt`` need
        the key present with an integer value on the right side of the bound.
        """
        return self._compile()(labels)

    def _compile(self) -> _LabelCheck:
        key, op, values = self.key, self.operator, self.values
        if op in UNARY_OPERATORS:
            if op is Operator.EXISTS:
                return lambda labels: key in labels
            return lambda labels: key not in labels
        if op in ORDERED_OPERATORS:
            bound = int(values[0])
            above = op is Operator.GREATER_THAN

            def compare(labels: Mapping[str, str]) -> bool:
                raw = labels.get(key)
                number = None if raw is None else parse_int64(raw)
                if number is None:
                    return False
                return number > bound if above else number < bound

            return compare
        positive = op in POSITIVE_OPERATORS
        if len(values) == 1:
            only = values[0]
            if positive:
                return lambda labels: labels.get(key) == only
            return lambda labels: labels.get(key) != only
        allowed = frozenset(values)
        if positive:
            return lambda labels: labels.get(key) in allowed
        return lambda labels: labels.get(key) not in allowed

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        joined = ",".join(self.values)
        if op in SET_OPERATORS:
            return f"{self.key} {op.value} ({joined})"
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(op, op.value)
        return f"{self.key}{symbol}{joined}"


class LabelSelector:
    """An AND of label :class:`Requirement` s, like apimachinery's ``labels.Selector``.

    Grammar of :meth:`parse` (apimachinery's ``labels.Parse``)::

        selector     ::= "" | requirement ("," requirement)*
        requirement  ::= ["!"] KEY [ set-op "(" values ")" | exact-op VALUE | ("<"|">") INT ]
        set-op       ::= "in" | "notin"
        exact-op     ::= "=" | "==" | "!="
        values       ::= VALUE ("," VALUE)*     (values may be empty: "(a,,b)", "()")

    Whitespace (space, tab, CR, LF) may separate tokens. A bare ``KEY`` means the
    key exists, ``!KEY`` that it does not. ``x in ()`` is ``x in ("")`` and
    ``x=`` is ``x=""``, as in apimachinery. Requirements are kept sorted by key
    (stably), so ``str()`` is canonical: parsing it gives an equal selector.

    Guarantees: instances are immutable and hashable; :meth:`matches` never
    raises for a mapping of strings (``None`` counts as no labels).
    """

    __slots__ = ("_checks", "_exact", "_nothing", "_requirements")

    _requirements: tuple[Requirement, ...]
    _checks: tuple[_LabelCheck, ...]
    _exact: Mapping[str, str]
    _nothing: bool

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        self._requirements = tuple(sorted(requirements, key=lambda r: r.key))
        self._checks = tuple(r._compile() for r in self._requirements)
        exact: dict[str, str] = {}
        for r in self._requirements:
            if r.operator in POSITIVE_OPERATORS and len(r.values) == 1:
                exact.setdefault(r.key, r.values[0])
        self._exact = MappingProxyType(exact)
        self._nothing = False

    @classmethod
    def everything(cls) -> LabelSelector:
        """The selector that matches every object (``labels.Everything()``)."""
        return cls()

    @classmethod
    def nothing(cls) -> LabelSelector:
        """The selector that matches no object (``labels.Nothing()``).

        It is what a ``null`` metav1.LabelSelector means. Its string form is
        ``""``, like apimachinery's, so it does not survive a round trip
        through :meth:`parse`.
        """
        selector = cls()
        selector._nothing = True
        return selector

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse a selector string as kube-apiserver does for ``?labelSelector=``.

        Raises :class:`SelectorError` with apimachinery's message on bad syntax,
        an invalid key or value, or a bad value count.
        """
        return cls(Requirement(*parsed) for parsed in parse_label_selector(text))

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> LabelSelector:
        """A selector requiring every ``key=value`` of ``labels`` (``SelectorFromSet``).

        An empty mapping gives :meth:`everything`. Keys and values are
        validated; a bad one raises :class:`SelectorError`.
        """
        return cls(Requirement(key, Operator.EQUALS, (value,)) for key, value in labels.items())

    @classmethod
    def of(cls, value: str | Mapping[str, Any] | LabelSelector) -> LabelSelector:
        """``value`` as a selector: one already, its string form, or a metav1.LabelSelector
        dict (SelectorError if it is none of them validly)."""
        if isinstance(value, LabelSelector):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        return cls.from_dict(value)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any] | None) -> LabelSelector:
        """Convert a metav1.LabelSelector object (``LabelSelectorAsSelector``).

        ``None`` selects nothing; ``{}`` (or empty ``matchLabels`` and
        ``matchExpressions``) selects everything. ``matchLabels`` entries
        become ``=`` requirements; ``matchExpressions`` operators are ``In``,
        ``NotIn`` (non-empty ``values``), ``Exists`` and ``DoesNotExist``
        (no ``values``). Raises :class:`SelectorError` with apimachinery's
        message otherwise.
        """
        if obj is None:
            return cls.nothing()
        match_labels = obj.get("matchLabels") or {}
        expressions = obj.get("matchExpressions") or []
        if not isinstance(match_labels, Mapping) or not isinstance(expressions, list):
            raise SelectorError("matchLabels must be an object and matchExpressions a list")
        requirements: list[Requirement] = []
        for key in sorted(match_labels):
            value = match_labels[key]
            if not isinstance(value, str):
                raise SelectorError(f"matchLabels[{key}]: label values must be strings")
            requirements.append(Requirement(key, Operator.EQUALS, (value,)))
        for expression in expressions:
            if not isinstance(expression, Mapping):
                raise SelectorError("matchExpressions items must be objects")
            raw_op = expression.get("operator")
            op = _EXPRESSION_OPERATORS.get(raw_op) if isinstance(raw_op, str) else None
            if op is None:
                raise SelectorError(
                    f"{go_quote(str(raw_op or ''))} is not a valid label selector operator"
                )
            values = expression.get("values") or []
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise SelectorError("matchExpressions values must be a list of strings")
            requirements.append(Requirement(str(expression.get("key") or ""), op, tuple(values)))
        return cls(requirements)

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """The requirements, sorted by key."""
        return self._requirements

    @property
    def is_empty(self) -> bool:
        """True when the selector matches everything."""
        return not self._requirements and not self._nothing

    def equality_requirements(self) -> Mapping[str, str]:
        """Label values an object must have, by key (``RequiresExactMatch``).

        Comes from ``=``, ``==`` and single-value ``in`` requirements (the first
        one for a key). Every object this selector matches has
        ``labels[key] == value`` for every item, so a cache may look up any one
        item in an index to narrow the candidates; it must still call
        :meth:`matches` on each.
        """
        return self._exact

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with these labels is selected."""
        if self._nothing:
            return False
        if labels is None:
            labels = _NO_LABELS
        # A plain loop: all() over a generator costs a frame per call on this hot path.
        for check in self._checks:  # noqa: SIM110
            if not check(labels):
                return False
        return True

    def __str__(self) -> str:
        return ",".join(str(r) for r in self._requirements)

    def __repr__(self) -> str:
        if self._nothing:
            return "LabelSelector.nothing()"
        return f"LabelSelector.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelector):
            return NotImplemented
        return self._requirements == other._requirements and self._nothing == other._nothing

    def __hash__(self) -> int:
        return hash((self._requirements, self._nothing))


_GENERIC_FIELDS: Final = frozenset({"metadata.name", "metadata.namespace"})
_NO_LABELS: Final[Mapping[str, str]] = MappingProxyType({})
_EXPRESSION_OPERATORS: Final = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}

# --- field selectors (apimachinery pkg/fields) ---


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One term of a field selector: ``field`` ``=``/``!=`` ``value``.

    ``==`` parses to :attr:`Operator.EQUALS`, as in apimachinery. ``field`` is
    a dotted path such as ``metadata.name``; it is not validated here (see
    :meth:`FieldSelector.validate`).
    """

    field: str
    operator: Operator
    value: str

    def __post_init__(self) -> None:
        operator = to_operator(self.operator)
        if operator is Operator.DOUBLE_EQUALS:
            operator = Operator.EQUALS
        if operator not in (Operator.EQUALS, Operator.NOT_EQUALS):
            raise SelectorError(f"field selectors support only =, == and !=, not {operator.value}")
        object.__setattr__(self, "operator", operator)

    def __str__(self) -> str:
        symbol = "!=" if self.operator is Operator.NOT_EQUALS else "="
        return f"{self.field}{symbol}{escape_field_value(self.value)}"


def _field_string(value: object) -> str:
    """A field value as kube-apiserver's field sets spell it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return ""


class FieldSelector:
    """An AND of :class:`FieldRequirement` s, like apimachinery's ``fields.Selector``.

    Grammar of :meth:`parse` (apimachinery's ``fields.ParseSelector``): terms
    separated by unescaped commas; each term is ``FIELD OP VALUE`` split at the
    first ``!=``, ``==`` or ``=``; in ``VALUE`` the characters ``\\``, ``,`` and
    ``=`` are written ``\\\\``, ``\\,`` and ``\\=``. Empty terms are skipped,
    nothing is trimmed, and terms are kept sorted by their text, so ``str()``
    is canonical.

    Field names are not checked by :meth:`parse`; the API server calls
    :meth:`validate` with the field labels the resource supports.

    Guarantees: instances are immutable and hashable; :meth:`matches` never
    raises for a JSON-like object.
    """

    __slots__ = ("_checks", "_requirements")

    _requirements: tuple[FieldRequirement, ...]
    _checks: tuple[tuple[str, tuple[str, ...], bool, str], ...]

    def __init__(self, requirements: Iterable[FieldRequirement] = ()) -> None:
        self._requirements = tuple(sorted(requirements, key=str))
        self._checks = tuple(
            (r.field, tuple(r.field.split(".")), r.operator is Operator.EQUALS, r.value)
            for r in self._requirements
        )

    @classmethod
    def everything(cls) -> FieldSelector:
        """The selector that matches every object."""
        return cls()

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        """Parse a selector string as kube-apiserver does for ``?fieldSelector=``.

        Raises :class:`SelectorError` with apimachinery's message for a term
        without an operator or a badly escaped value.
        """
        return cls(
            FieldRequirement(field, operator, value)
            for field, operator, value in parse_field_selector(text)
        )

    @classmethod
    def from_fields(cls, fields: Mapping[str, str]) -> FieldSelector:
        """A selector requiring every ``field=value`` of ``fields`` (``SelectorFromSet``)."""
        return cls(
            FieldRequirement(field, Operator.EQUALS, value)
            for field, value in sorted(fields.items())
        )

    @property
    def requirements(self) -> tuple[FieldRequirement, ...]:
        """The requirements, in canonical order."""
        return self._requirements

    @property
    def is_empty(self) -> bool:
        """True when the selector matches everything."""
        return not self._requirements

    def fields(self) -> frozenset[str]:
        """The field paths the selector uses."""
        return frozenset(r.field for r in self._requirements)

    def validate(self, allowed: Collection[str]) -> None:
        """Raise :class:`SelectorError` for the first field not in ``allowed``.

        The message is kube-apiserver's: ``field label not supported: spec.foo``
        for a kind with field labels of its own (Pods, Events, ...), and
        ``"spec.foo" is not a known field selector: only "metadata.name",
        "metadata.namespace"`` for a kind with only those two.
        """
        for requirement in self._requirements:
            if requirement.field not in allowed:
                if set(allowed) <= _GENERIC_FIELDS:
                    raise SelectorError(f'"{requirement.field}" is not a known field selector: '
                                        'only "metadata.name", "metadata.namespace"')
                raise SelectorError(f"field label not supported: {requirement.field}")

    def equality_requirements(self) -> Mapping[str, str]:
        """Field values an object must have, by field (the first ``=`` for each)."""
        exact: dict[str, str] = {}
        for r in self._requirements:
            if r.operator is Operator.EQUALS:
                exact.setdefault(r.field, r.value)
        return MappingProxyType(exact)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` is selected, reading each field by its dotted path.

        A missing field, or one that is not a string, number or boolean,
        reads as ``""``; booleans read as ``true``/``false``.
        """
        for _, path, equal, value in self._checks:
            current: object = obj
            for part in path:
                # type() first: objects are plain dicts, and the ABC check is slow.
                if type(current) is dict or isinstance(current, Mapping):
                    current = current.get(part)
                else:
                    current = None
            if (_field_string(current) == value) is not equal:
                return False
        return True

    def matches_fields(self, fields: Mapping[str, str]) -> bool:
        """Whether an object whose field set is ``fields`` is selected.

        For kinds whose field labels are not plain paths (an Event's
        ``source`` is ``source.component``), the server computes the field set
        the way kube-apiserver does and matches against it; a missing field
        reads as ``""``.
        """
        for field, _, equal, value in self._checks:
            if (fields.get(field, "") == value) is not equal:
                return False
        return True

    def __str__(self) -> str:
        return ",".join(str(r) for r in self._requirements)

    def __repr__(self) -> str:
        return f"FieldSelector.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSelector):
            return NotImplemented
        return self._requirements == other._requirements

    def __hash__(self) -> int:
        return hash(self._requirements)
