"""Strategic merge patch for built-in kinds, as kube-apiserver applies it.

Follows k8s.io/apimachinery ``util/strategicpatch`` (``StrategicMergeMapPatch``
with ``MergeParallelList`` and ``IgnoreUnmatchedNulls``). The Go struct tags
that drive it (``patchStrategy``, ``patchMergeKey``) are what kube-apiserver
publishes as ``x-kubernetes-patch-strategy`` and
``x-kubernetes-patch-merge-key`` in its OpenAPI; :func:`patch_schema_for`
compiles a kind's from there
(:mod:`reconcilekit.testing.apiserver.patching.strategic_schemas`).

Semantics, in the order they apply to each object of the patch:

1. ``$patch: replace`` makes the object replace the original; ``$patch:
   delete`` makes it ``{}``; any other ``$patch`` is :class:`UnmergeablePatch`.
2. ``$retainKeys: [k...]`` drops every original member not listed; a patch
   member (other than ``null`` or a directive) that is not listed is
   :class:`MalformedPatch`.
3. ``$setElementOrder/<list>: [...]`` merges that list (below), then orders
   the items it names as it lists them, keeping the others where the
   original had them.
4. Every other member: ``null`` deletes; a member the original lacks, or of a
   different type, is copied in (without ``null`` members and without
   objects carrying ``$patch``); objects merge recursively; lists merge if
   the schema says so and are replaced otherwise; scalars replace.
   ``$deleteFromPrimitiveList/<list>: [...]`` removes those values from a
   merged list of primitives.

A merged list of primitives is the union of both lists. A merged list of
objects matches items by the merge key: matching items merge recursively,
new ones are added, an item ``{<key>: v, $patch: delete}`` removes the
original item, and an item ``{$patch: replace}`` makes the rest of the patch
list replace the original. Items are then ordered as apimachinery does: patch
items in patch order, original items in original order, interleaved by their
original positions; a patch item the original lacks comes before the
original items that follow it, so new items come first unless
``$setElementOrder`` says otherwise.

Where this differs from kube-apiserver: a member whose name starts with ``$``
but is not one of the directives above is :class:`MalformedPatch` here,
while kube-apiserver keeps it as a field and loses it when decoding into the
kind (or rejects it under ``fieldValidation=Strict``); ``$patch: replace``
objects and added members are cleaned of ``null`` members here, which is
what decoding into the kind does there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...._foundations.go_compat import go_format
from ..machinery.unstructured import json_type
from .json_patch import (
    JSON,
    MalformedPatch,
    PatchError,
    UnmergeablePatch,
    copy_json,
)
from .strategic_schemas import MergeList, PatchSchema, SchemaNode, patch_schema_for

__all__ = ["MergeList", "PatchSchema", "patch_schema_for", "strategic_merge_patch"]

_PATCH: Final = "$patch"
_RETAIN_KEYS: Final = "$retainKeys"
_DELETE_FROM: Final = "$deleteFromPrimitiveList"
_SET_ORDER: Final = "$setElementOrder"


def strategic_merge_patch(
    target: Any, patch: Any, schema: PatchSchema | Mapping[str, MergeList]
) -> dict[str, Any]:
    """Apply a strategic merge patch to an object, following ``schema``.

    See the module docstring for the rules. ``schema`` may be a plain mapping
    of rules; ``{}`` merges objects and replaces every list. Never modifies
    its arguments; the result shares no dict or list with them.

    Raises:
      MalformedPatch: the patch is not an object, a directive is badly
        formed, or an unknown ``$`` directive is used (400 in kube-apiserver
        for the directive-format errors).
      PatchError: a list of lists (422).
      UnmergeablePatch: a merge-list item without its merge key, items of
        mixed types, an unknown ``$patch`` value, a ``$setElementOrder`` list
        that disagrees with the patch list (500 in kube-apiserver).
    """
    if not isinstance(patch, dict):
        raise MalformedPatch(f"json: cannot unmarshal {json_type(patch)} into Go value of "
                             "type map[string]interface {}")
    if not isinstance(target, dict):
        raise TypeError("strategic_merge_patch applies to JSON objects only")
    root = (schema if isinstance(schema, PatchSchema) else PatchSchema(schema)).root
    original, changes = copy_json(target), copy_json(patch)
    assert isinstance(original, dict) and isinstance(changes, dict)
    return _merge_map(original, changes, root)


# --- objects ---


def _merge_map(
    original: dict[str, JSON], patch: dict[str, JSON], node: SchemaNode
) -> dict[str, JSON]:
    """Merge ``patch`` into ``original``; both are private copies and may change."""
    if _PATCH in patch:
        directive = patch.pop(_PATCH)
        if directive == "replace":
            cleaned, _ = _clean(patch)
            assert isinstance(cleaned, dict)
            return cleaned
        if directive == "delete":
            return {}
        shown = go_format({**patch, _PATCH: directive})
        raise UnmergeablePatch(f"unknown patch type: {directive} in map: {shown}")
    _retain_keys(original, patch)
    _set_element_orders(original, patch, node)
    for name, value in patch.items():
        key, delete_list = name, False
        if name.startswith(_DELETE_FROM):
            key, delete_list = _directive_target(name, _DELETE_FROM), True
        elif name.startswith("$"):
            raise MalformedPatch(f"unknown strategic merge patch directive {name!r}")
        if value is None:
            original.pop(key, None)
            continue
        current = original.get(key, _MISSING)
        if current is _MISSING or type(current) is not type(value):
            if not delete_list:
                _put(original, key, value)
        elif isinstance(current, dict) and isinstance(value, dict):
            original[key] = _merge_map(current, value, node.child(key))
        elif isinstance(current, list) and isinstance(value, list):
            original[key] = _merge_field(current, value, node.child(key), delete_list)
        else:
            original[key] = value
    return original


_MISSING: Final = object()


def _directive_target(name: str, prefix: str) -> str:
    head, slash, target = name.partition("/")
    if head != prefix or not slash:
        what = "primitive list" if prefix == _DELETE_FROM else "setElementOrder list"
        raise MalformedPatch(f"invalid patch format of {what}")
    return target


def _put(original: dict[str, JSON], key: str, value: JSON) -> None:
    cleaned, keep = _clean(value)
    if keep:
        original[key] = cleaned
    else:
        original.pop(key, None)


def _clean(value: JSON) -> tuple[JSON, bool]:
    """Drop ``null`` members, objects carrying ``$patch`` and other directives.

    Returns the cleaned value and whether to keep it at all.
    """
    if isinstance(value, dict):
        if _PATCH in value:
            return None, False
        cleaned: dict[str, JSON] = {}
        for name, item in value.items():
            if name.startswith("$"):
                if name == _RETAIN_KEYS or name.startswith((_DELETE_FROM, _SET_ORDER)):
                    continue
                raise MalformedPatch(f"unknown strategic merge patch directive {name!r}")
            if item is None:
                continue
            item, keep = _clean(item)
            if keep:
                cleaned[name] = item
        return cleaned, True
    if isinstance(value, list):
        kept = [item for item, keep in map(_clean, value) if keep]
        return kept, True
    return value, True


def _retain_keys(original: dict[str, JSON], patch: dict[str, JSON]) -> None:
    if _RETAIN_KEYS not in patch:
        return
    retained = patch.pop(_RETAIN_KEYS)
    if not isinstance(retained, list) or not all(isinstance(k, str) for k in retained):
        raise MalformedPatch("invalid patch format of retainKeys")
    allowed = set(retained)
    for name, value in patch.items():
        exempt = value is None or name.startswith((_DELETE_FROM, _SET_ORDER))
        if not exempt and name not in allowed:
            raise MalformedPatch("invalid patch format of retainKeys")
    for name in [name for name in original if name not in allowed]:
        del original[name]


def _set_element_orders(
    original: dict[str, JSON], patch: dict[str, JSON], node: SchemaNode
) -> None:
    for name in [name for name in patch if name.startswith(_SET_ORDER)]:
        order = patch.pop(name)
        if not isinstance(order, list):
            raise UnmergeablePatch(f"{name} must be a list")
        key = _directive_target(name, _SET_ORDER)
        field = node.child(key)
        merge_key = field.rule.key if field.rule else None
        current, change = original.get(key), patch.get(key)
        if current is not None and not isinstance(current, list):
            raise UnmergeablePatch(f"{key} is not a list")
        if change is not None and not isinstance(change, list):
            raise UnmergeablePatch(f"{key} in the patch is not a list")
        _check_order(change or [], order, merge_key)
        if current is None and change is None:
            continue
        if change is None:
            merged = current or []
        elif current is None:
            cleaned, _ = _clean(change)
            merged = cleaned if isinstance(cleaned, list) else []
        else:
            merged = _merge_field(current, change, field, False)
        is_map = _element_type(current or [], change or []) is dict
        if is_map and merge_key is None:
            raise UnmergeablePatch(f"cannot order {key}: its items have no merge key")
        in_order, others = _partition(merged, order, merge_key)
        original[key] = _order(in_order, others, order, current or [], merge_key)
        patch.pop(key, None)


def _check_order(change: list[JSON], order: list[JSON], merge_key: str | None) -> None:
    """The patch list must name its items in the order ``$setElementOrder`` does."""
    if not change or not order:
        return
    items = [v for v in change if not (isinstance(v, dict) and v.get(_PATCH) == "delete")]
    at = wanted = 0
    while at < len(items) and wanted < len(order):
        item = items[at]
        if isinstance(item, dict) and _PATCH in item:
            at += 1
            continue
        if _same_item(item, order[wanted], merge_key):
            at += 1
        wanted += 1
    if at < len(items):
        raise UnmergeablePatch(
            f"The order in patch list:\n{change}\n doesn't match {_SET_ORDER} list:\n{order}\n"
        )


# --- lists ---


def _merge_field(
    current: list[JSON], change: list[JSON], field: SchemaNode, delete_list: bool
) -> list[JSON]:
    if field.rule is None:
        cleaned, _ = _clean(change)
        assert isinstance(cleaned, list)
        return cleaned
    merge_key = field.rule.key
    if not current and not change:
        return current
    if _element_type(current, change) is not dict:
        if delete_list:
            doomed = {_scalar_key(v) for v in change}
            return [v for v in current if _scalar_key(v) not in doomed]
        merged = list({_scalar_key(v): v for v in current + change}.values())
        in_patch, others = _partition(merged, change, None)
        return _order(in_patch, others, change, current, None)
    if merge_key is None:
        raise UnmergeablePatch("cannot merge lists without merge key for type map")
    current, change = _special_items(current, change, merge_key)
    merged = list(current)
    for item in change:
        assert isinstance(item, dict)
        if merge_key not in item:
            raise UnmergeablePatch(_no_merge_key(item, merge_key))
        at = _find(merged, merge_key, item[merge_key])
        if at is None:
            cleaned, _ = _clean(item)
            merged.append(cleaned)
        else:
            target = merged[at]
            assert isinstance(target, dict)
            merged[at] = _merge_map(target, item, field.item())
    in_patch, others = _partition(merged, change, merge_key)
    return _order(in_patch, others, change, current, merge_key)


def _special_items(
    current: list[JSON], change: list[JSON], merge_key: str
) -> tuple[list[JSON], list[JSON]]:
    """Apply ``$patch`` items: deletions now; ``replace`` makes the rest the list."""
    rest: list[JSON] = []
    replace = False
    for item in change:
        assert isinstance(item, dict)
        if _PATCH not in item:
            rest.append(item)
            continue
        directive = item[_PATCH]
        if directive == "delete":
            if merge_key not in item:
                raise UnmergeablePatch(_no_merge_key(item, merge_key))
            doomed = item[merge_key]
            current = [
                v
                for v in current
                if not (isinstance(v, dict) and merge_key in v and _same(v[merge_key], doomed))
            ]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise UnmergeablePatch("merging lists cannot yet be specified in the patch")
        else:
            raise UnmergeablePatch(f"unknown patch type: {directive} in map: {go_format(item)}")
    return (rest, []) if replace else (current, rest)


def _element_type(*lists: list[JSON]) -> type:
    """The one type of every item; lists of lists and mixed types are errors."""
    found: type | None = None
    for items in lists:
        for item in items:
            if isinstance(item, list):
                raise PatchError("lists of lists are not supported")
            if found is None:
                found = type(item)
            elif type(item) is not found:
                raise UnmergeablePatch(
                    f"list element types are not identical: {go_format(list(lists))}")
    if found is None:
        raise UnmergeablePatch("no elements in any of the given slices")
    return found


def _partition(
    merged: list[JSON], by: list[JSON], merge_key: str | None
) -> tuple[list[JSON], list[JSON]]:
    """Split ``merged`` into the items ``by`` names and the others, in order."""
    named: list[JSON] = []
    others: list[JSON] = []
    for item in merged:
        if merge_key is not None and not (isinstance(item, dict) and merge_key in item):
            raise UnmergeablePatch(_no_merge_key(item, merge_key))
        (named if _position(by, item, merge_key) >= 0 else others).append(item)
    return named, others


def _order(
    named: list[JSON],
    others: list[JSON],
    wanted: list[JSON],
    original: list[JSON],
    merge_key: str | None,
) -> list[JSON]:
    """apimachinery's ``normalizeElementOrder``.

    ``named`` is sorted as ``wanted`` lists it and ``others`` as ``original``
    did; then an item of ``others`` goes first only when both it and the next
    ``named`` item are in ``original`` and it came before.
    """

    def sort(items: list[JSON], by: list[JSON]) -> list[JSON]:
        def rank(item: JSON) -> int:
            position = _position(by, item, merge_key)
            return position if position >= 0 else len(by)

        return sorted(items, key=rank)

    if merge_key is not None:
        for item in wanted + original:
            if not (isinstance(item, dict) and merge_key in item):
                raise UnmergeablePatch(_no_merge_key(item, merge_key))
    named, others = sort(named, wanted), sort(others, original)
    result: list[JSON] = []
    i = j = 0
    while i < len(others) or j < len(named):
        if j >= len(named):
            result.append(others[i])
            i += 1
            continue
        if i < len(others):
            left = _position(original, others[i], merge_key)
            right = _position(original, named[j], merge_key)
            if 0 <= left < right:
                result.append(others[i])
                i += 1
                continue
        result.append(named[j])
        j += 1
    return result


def _position(items: list[JSON], item: JSON, merge_key: str | None) -> int:
    if merge_key is None:
        key = _scalar_key(item)
        return next((i for i, v in enumerate(items) if _scalar_key(v) == key), -1)
    if not isinstance(item, dict) or merge_key not in item:
        return -1
    found = _find(items, merge_key, item[merge_key])
    return -1 if found is None else found


def _find(items: list[JSON], merge_key: str, value: JSON) -> int | None:
    for i, item in enumerate(items):
        if isinstance(item, dict) and merge_key in item and _same(item[merge_key], value):
            return i
    return None


def _same(left: JSON, right: JSON) -> bool:
    """Go's ``==`` on decoded JSON: same type and value (1 is not 1.0 or True)."""
    return type(left) is type(right) and left == right


def _same_item(left: JSON, right: JSON, merge_key: str | None) -> bool:
    if merge_key is None:
        return _same(left, right)
    if not isinstance(left, dict) or not isinstance(right, dict):
        raise UnmergeablePatch(f"expected objects with merge key {merge_key!r}")
    for item in (left, right):
        if merge_key not in item:
            raise UnmergeablePatch(_no_merge_key(item, merge_key))
    return _same(left[merge_key], right[merge_key])


def _scalar_key(value: JSON) -> tuple[type, JSON]:
    return type(value), value


def _no_merge_key(item: JSON, merge_key: str) -> str:
    return f"map: {go_format(item)} does not contain declared merge key: {merge_key}"
