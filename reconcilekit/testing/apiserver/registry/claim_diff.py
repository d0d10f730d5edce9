"""A claim spec's change as kube-apiserver's 422 shows it: Go's ``cmp.Diff`` of
``core.PersistentVolumeClaimSpec``.

Each changed field is a ``-`` line of its old value and a ``+`` line of its
new one, in full Go syntax; up to two unchanged fields either side of a
change are shown, the others counted (``... // 5 identical fields``), as
``cmp`` reports a struct. Values are shown as ``cmp`` shows them for the
fields' Go types; a change inside a nested value (a selector, resources,
a data source) is shown as a change of the whole field, where ``cmp`` would
descend into it.
"""

from __future__ import annotations

from typing import Any

from ...._foundations.go_compat import go_quote
from ..machinery.unstructured import Obj

__all__ = ["claim_spec_diff"]

# (Go field name, JSON name, Go type of a changed value)
_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("AccessModes", "accessModes", "[]core.PersistentVolumeAccessMode"),
    ("Selector", "selector", "&v1.LabelSelector"),
    ("Resources", "resources", "core.ResourceRequirements"),
    ("VolumeName", "volumeName", ""),
    ("StorageClassName", "storageClassName", "&"),
    ("VolumeMode", "volumeMode", "&"),
    ("DataSource", "dataSource", "&core.TypedLocalObjectReference"),
    ("DataSourceRef", "dataSourceRef", "&core.TypedObjectReference"),
)
_CONTEXT = 2


def _format(field: str, value: Any, typed: bool) -> str:
    """``value`` of JSON field ``field`` as ``cmp`` prints it (``typed``: with its type,
    as a changed value is)."""
    go_type = next(t for _, json, t in _FIELDS if json == field)
    if field == "volumeName":
        return go_quote(str(value or ""))
    if value is None:
        return "nil"
    if go_type == "&":
        return "&" + go_quote(str(value))
    prefix = go_type if typed else ("&" if go_type.startswith("&") else "")
    return prefix + _composite(value)


def _composite(value: Any) -> str:
    if isinstance(value, list):
        return "{" + ", ".join(_composite(v) for v in value) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)}: {_composite(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return go_quote(value)
    return "nil" if value is None else str(value).lower() if isinstance(value, bool) else str(
        value)


def _key(key: str) -> str:
    return key[:1].upper() + key[1:]


def _resources(value: Any) -> str:
    if not isinstance(value, dict):
        return "{}"
    parts = []
    for name in ("limits", "requests"):
        quantities = value.get(name)
        if isinstance(quantities, dict) and quantities:
            shown = ", ".join(
                f"s{go_quote(k)}: {{i: {{...}}, s: {go_quote(str(q))}, Format: "
                f"{go_quote(_quantity_format(str(q)))}}}" for k, q in sorted(quantities.items()))
            parts.append(f"{_key(name)}: {{{shown}}}")
    return "{" + ", ".join(parts) + "}"


def _quantity_format(quantity: str) -> str:
    if quantity.endswith(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")):
        return "BinarySI"
    if any(c in "eE" for c in quantity.lstrip("+-")[1:]) and quantity[-1:].isdigit():
        return "DecimalExponent"
    return "DecimalSI"


def _shown(field: str, value: Any, typed: bool) -> str:
    if field == "resources":
        return ("core.ResourceRequirements" if typed else "") + _resources(value)
    return _format(field, value, typed)


def claim_spec_diff(old: Obj, new: Obj) -> str:
    """The ``cmp.Diff`` of two claim specs (JSON), ending in a newline."""
    rows = [(go, old.get(json), new.get(json), json) for go, json, _ in _FIELDS]
    changed = [before != after for _, before, after, _ in rows]
    # entries: (mark, Go name, value) or ("", "", "... // n identical fields")
    entries: list[tuple[str, str, str]] = []
    i = 0
    while i < len(rows):
        go, before, after, json = rows[i]
        if changed[i]:
            entries.append(("-", go, _shown(json, before, True)))
            entries.append(("+", go, _shown(json, after, True)))
            i += 1
            continue
        end = i
        while end < len(rows) and not changed[end]:
            end += 1
        equal = end - i
        low = min(_CONTEXT if i > 0 else 0, equal)
        high = min(_CONTEXT if end < len(rows) else 0, equal - low)
        if equal - (low + high) == 1:
            high += 1
        for k in range(i, i + low):
            entries.append((" ", rows[k][0], _shown(rows[k][3], rows[k][1], False)))
        if equal > low + high:
            count = equal - low - high
            entries.append(("", "", f"... // {count} identical "
                                    f"{'field' if count == 1 else 'fields'}"))
        for k in range(end - high, end):
            entries.append((" ", rows[k][0], _shown(rows[k][3], rows[k][1], False)))
        i = end
    lines = ["  core.PersistentVolumeClaimSpec{"]
    group: list[tuple[str, str, str]] = []

    def flush() -> None:
        width = max((len(name) for _, name, _ in group), default=0) + 2
        lines.extend(f"{mark} \t{f'{name}:'.ljust(width)}{value}," for mark, name, value in group)
        group.clear()

    for entry in entries:
        if entry[0]:
            group.append(entry)
        else:
            flush()
            lines.append(f"  \t{entry[2]}")
    flush()
    lines.append("  }")
    return "\n".join(lines) + "\n"
