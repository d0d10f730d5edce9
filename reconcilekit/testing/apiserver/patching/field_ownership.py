"""Server-side apply's field ownership: ``managedFields`` per manager, conflicts, ``force``.

What kube-apiserver's field manager (structured-merge-diff) does, on the
same data model:

* a *field set* is a set of paths into an object: ``f:NAME`` steps into a map,
  ``k:{"key":...}`` into an element of an associative list
  (``x-kubernetes-list-type: map``, or a ``patchMergeKey`` list of a built-in
  kind), ``v:VALUE`` names an element of a set; anything else (scalars,
  atomic lists) is a leaf;
* an **update** (create, PUT, patch) gives its manager every path it added or
  changed, takes them from every other manager, and takes removed paths from
  everyone; an object with no managedFields (reset, or created owning
  nothing) stays without: updates do not track it;
* an update of the main resource may write ``managedFields`` itself: the
  entries it sends replace the stored ones, ``[]`` resets them
  (:mod:`.sent_managed_fields`);
* an **apply** merges the configuration into the object; the manager's set
  becomes exactly the configuration's leaves. A path another manager owns
  that the apply would change or add is a *conflict*: 409 naming each one,
  unless ``force`` moves it to the applier; on an object no one manages,
  what it holds is first ``before-first-apply``'s, an update. Paths the
  manager applied before and no longer applies, owned by no one else, are
  removed from the object.

The paths of ``apiVersion``, ``kind`` and server-set metadata are never
owned; with a status subresource, writes to the main resource own nothing in
``status`` and ``status`` writes own nothing else (entries carry
``subresource: status``).

Invariant: after every write, each manager's entry holds at least one path,
and no path is owned by two managers unless both applied the same value.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..machinery.resources import ResourceType
from ..machinery.status import StatusError
from ..machinery.unstructured import timestamp
from .strategic_schemas import SchemaNode, custom_resource_node, patch_schema_for

__all__ = ["ApplyConflict", "FieldOwnership", "Shape", "shape_of"]

Step = tuple[str, Any]  # ("f", name) | ("k", keys JSON) | ("v", value JSON) | ("i", index)
Path = tuple[Step, ...]
_IGNORED_META = frozenset({"name", "namespace", "uid", "resourceVersion", "generation",
                           "creationTimestamp", "deletionTimestamp", "managedFields",
                           "deletionGracePeriodSeconds", "selfLink"})


# -- the shape of an object: which lists are associative ----------------------------------

Shape = SchemaNode  # how a node's members are owned: see .strategic_schemas


def shape_of(rtype: ResourceType) -> Shape:
    """A custom resource's shape from its schema; a built-in kind's from kube-apiserver's
    OpenAPI schema of it."""
    if rtype.schema is not None:
        return custom_resource_node(rtype.schema.schema)
    r = rtype.resource
    return patch_schema_for(r.group, r.version, r.kind).root


# -- field sets -----------------------------------------------------------------------------

def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _element(item: Any, shape: Shape) -> Step | None:
    """The step naming a list element: its value (sets) or its keys (associative lists)."""
    if shape.list_type == "set":
        return ("v", _json(item))
    if shape.list_type == "map" and isinstance(item, Mapping):
        return ("k", _json({k: item[k] for k in shape.keys if k in item}))
    return None


def _children(value: Any, shape: Shape) -> Iterator[tuple[Step, Any, Shape]]:
    """The members of a map (a null one is unset), or the elements of an associative list
    or set."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if v is not None:
                yield ("f", k), v, shape.child(k)
    elif isinstance(value, list) and shape.list_type in ("map", "set"):
        for item in value:
            step = _element(item, shape)
            if step is not None:
                yield step, item, shape.item()


def _granular(value: Any, shape: Shape) -> bool:
    """Whether ``value``'s members are owned one by one (not an atomic map or list)."""
    if isinstance(value, Mapping):
        return not shape.atomic
    return isinstance(value, list) and shape.list_type in ("map", "set")


def leaves(value: Any, shape: Shape, path: Path = ()) -> set[Path]:
    """An applied configuration's field set (SMD ``ToFieldSet``)."""
    out: set[Path] = set()
    for step, child, child_shape in _children(value, shape):
        sub = (*path, step)
        if step[0] in ("k", "v") or (step[0] == "f" and not shape.declares(step[1])):
            out.add(sub)  # a list element, or a map's value: itself a member
        if _granular(child, child_shape) and (child or step[0] == "k"):
            out |= leaves(child, child_shape, sub)
        elif step[0] == "f":
            out.add(sub)
    return out


def _every(value: Any, shape: Shape, path: Path) -> set[Path]:
    """``path`` and every path below it (a subtree its parent did not hold at all)."""
    out = {path}
    if _granular(value, shape):
        for step, child, child_shape in _children(value, shape):
            out |= _every(child, child_shape, (*path, step))
    return out


def compare(old: Any, new: Any, shape: Shape, path: Path = ()
            ) -> tuple[set[Path], set[Path], set[Path]]:
    """(added, removed, modified) paths from ``old`` to ``new`` (SMD ``Compare``)."""
    added: set[Path] = set()
    removed: set[Path] = set()
    modified: set[Path] = set()
    if _granular(old, shape) and _granular(new, shape) and type(old) is type(new):
        olds = {step: child for step, child, _ in _children(old, shape)}
        news = {step: (child, child_shape) for step, child, child_shape in
                _children(new, shape)}
        for step, (child, child_shape) in news.items():
            sub = (*path, step)
            zero = step not in olds and step[0] == "f" and (
                child_shape.value or shape.in_zero_object(step[1]))
            if zero and isinstance(child, Mapping):
                # a struct held by value (or a required map) was there, empty or null: only
                # what is in it is new
                a, _, m = compare({}, child, child_shape, sub)
                added |= a | m
            elif zero and isinstance(child, list) and _granular(child, child_shape):
                # a required associative list or set was there, null: its elements are new,
                # the list itself is no new member (structured-merge-diff's Compare)
                for item_step, item, item_shape in _children(child, child_shape):
                    added |= _every(item, item_shape, (*sub, item_step))
            elif step not in olds:
                added |= _every(child, child_shape, sub)
            elif olds[step] != child:
                a, r, m = compare(olds[step], child, child_shape, sub)
                added |= a
                removed |= r
                modified |= m
        for step, child in olds.items():
            if step not in news:
                child_shape = shape.child(step[1]) if step[0] == "f" else shape.item()
                if step[0] == "f" and isinstance(child, Mapping) and (
                        child_shape.value or shape.in_zero_object(step[1])):
                    removed |= compare(child, {}, child_shape, (*path, step))[1]
                else:
                    removed |= _every(child, child_shape, (*path, step))
    elif old != new and path:
        modified.add(path)
    return added, removed, modified


def _ignored(path: Path, status_subresource: bool, subresource: str | None) -> bool:
    if not path:
        return True
    top = str(path[0][1])
    if top in ("apiVersion", "kind"):
        return True
    if top == "metadata" and (len(path) == 1 or str(path[1][1]) in _IGNORED_META):
        return True
    if status_subresource:
        return (top == "status") != (subresource == "status")
    return False


# -- fieldsV1 encoding ---------------------------------------------------------------------------

def _key(step: Step) -> str:
    return f"{step[0]}:{step[1]}"


def _step(key: str) -> Step:
    kind, _, rest = key.partition(":")
    if kind == "f":
        return ("f", rest)
    if kind == "i":
        return ("i", int(rest))
    return (kind, _json(orjson.loads(rest)))


def encode(paths: set[Path]) -> dict[str, Any]:
    """A field set as ``fieldsV1``: a tree of keys, ``"."`` where a node is itself a member."""
    root: dict[str, Any] = {}
    for path in paths:
        node = root
        for step in path:
            node = node.setdefault(_key(step), {})
    for path in paths:  # a member with members below it says so with "."
        node = root
        for step in path:
            node = node[_key(step)]
        if node and "." not in node:
            node["."] = {}
    return _sorted(root)


def _sorted(node: dict[str, Any]) -> dict[str, Any]:
    return {k: _sorted(node[k]) for k in sorted(node)}


def decode(fields: Mapping[str, Any], path: Path = ()) -> set[Path]:
    """The paths of a ``fieldsV1`` tree."""
    out: set[Path] = set()
    for key, below in fields.items():
        if key == ".":
            out.add(path)
            continue
        sub = (*path, _step(key))
        if isinstance(below, Mapping) and below:
            out |= decode(below, sub)
        else:
            out.add(sub)
    return out


def path_string(path: Path) -> str:
    """A path as structured-merge-diff prints it: ``.spec.containers[name="app"].image``."""
    out = []
    for kind, value in path:
        if kind == "f":
            out.append(f".{value}")
        elif kind == "k":
            keys = orjson.loads(value)
            out.append("[" + ",".join(f"{k}={_json(v)}" for k, v in sorted(keys.items())) + "]")
        elif kind == "v":
            out.append(f"[={value}]")
        else:
            out.append(f"[{value}]")
    return "".join(out)


# -- the managers -------------------------------------------------------------------------------

@dataclass(slots=True)
class _Entry:
    manager: str
    operation: str
    api_version: str
    time: str
    subresource: str
    paths: set[Path]

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)

    def printed(self) -> str:
        """As kube-apiserver names a manager in a conflict."""
        name = f'"{self.manager}"'
        if self.subresource:
            name += f' with subresource "{self.subresource}"'
        return f"{name} using {self.api_version}" if self.operation == "Update" else name

    def give_up(self, paths: set[Path]) -> None:
        """Another manager took (or removed) ``paths``."""
        self.paths -= paths

    def take(self, paths: set[Path], *, only: bool = False) -> None:
        """This manager owns ``paths`` too (``only``: owns exactly them)."""
        self.paths = set(paths) if only else self.paths | paths

    def stamp(self, api_version: str, time: str | None) -> None:
        """This manager wrote at ``api_version``, at ``time`` (None: its time stays)."""
        self.api_version = api_version
        if time is not None:
            self.time = time

    def sort_key(self) -> str:  # apply managers by name, update managers after them
        return self.manager if self.operation == "Apply" else "{" + self.manager

    def dump(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"manager": self.manager, "operation": self.operation,
                                 "apiVersion": self.api_version}
        if self.time:  # an apply that changed nothing leaves a new manager without one
            entry["time"] = self.time
        entry.update(fieldsType="FieldsV1", fieldsV1=encode(self.paths))
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


class ApplyConflict(StatusError):
    """409 Conflict: an apply would change fields other managers own."""


def _entries(obj: Mapping[str, Any]) -> list[_Entry]:
    return _decoded((obj.get("metadata") or {}).get("managedFields") or ())


def _decoded(raws: Iterable[Any]) -> list[_Entry]:
    """Entries as stored or sent (an entry without ``fieldsV1`` owns nothing)."""
    out = []
    for raw in raws:
        fields = raw.get("fieldsV1") if isinstance(raw, Mapping) else None
        if isinstance(raw, Mapping) and (fields is None or isinstance(fields, Mapping)):
            out.append(_Entry(str(raw.get("manager") or ""), str(raw.get("operation", "Update")),
                              str(raw.get("apiVersion", "")), str(raw.get("time") or ""),
                              str(raw.get("subresource") or ""), decode(fields or {})))
    return out


class FieldOwnership:
    """Field ownership for one kind: what an update or an apply does to ``managedFields``."""

    def __init__(self, rtype: ResourceType) -> None:
        self.rtype = rtype
        self.shape = shape_of(rtype)

    def _owned(self, paths: set[Path], subresource: str | None) -> set[Path]:
        flag = self.rtype.status_subresource
        return {p for p in paths if not _ignored(p, flag, subresource)}

    def _dump(self, entries: list[_Entry]) -> list[dict[str, Any]]:
        kept = [e for e in entries if e.paths]
        kept.sort(key=lambda e: (e.operation, e.time, e.manager, e.api_version, e.subresource))
        return [e.dump() for e in kept]

    def _own(self, entries: list[_Entry], manager: str, operation: str,
             subresource: str | None, now: float | None) -> _Entry:
        """``manager``'s entry (made if need be), stamped ``now`` unless None."""
        identity = (manager, operation, subresource or "")
        mine = next((e for e in entries if e.identity == identity), None)
        if mine is None:
            mine = _Entry(manager, operation, self.rtype.group_version, "", subresource or "",
                          set())
            entries.append(mine)
        mine.stamp(self.rtype.group_version, None if now is None else timestamp(now))
        return mine

    def updated(self, old: Mapping[str, Any] | None, new: dict[str, Any], manager: str,
                subresource: str | None, now: float, *,
                sent: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """``new``'s managedFields after ``manager`` wrote it over ``old`` (None: created).

        ``sent``: the entries the update's own managedFields make the object's
        (:func:`.sent_managed_fields.sent_entries`; None: ``old``'s stay). An
        object left with no entries (reset, or created owning nothing) is not
        tracked by updates: it stays without managedFields until an apply.
        """
        entries: list[_Entry] = []
        if old is not None:
            entries = _decoded(sent) if sent is not None else _entries(old)
            if not entries:
                return []
        added, removed, modified = compare(old or {}, new, self.shape)
        changed = self._owned(added | modified, subresource)
        removed = self._owned(removed, subresource)
        for entry in entries:
            entry.give_up(changed | removed)
        if changed:
            self._own(entries, manager, "Update", subresource, now).take(changed)
        return self._dump(entries)

    def created_by_apply(self, obj: Mapping[str, Any], manager: str,
                         now: float) -> list[dict[str, Any]]:
        """The managedFields of an object an apply created: the applier owns its config."""
        entry = _Entry(manager, "Apply", self.rtype.group_version, timestamp(now), "",
                       self._owned(leaves(obj, self.shape), None))
        return self._dump([entry])

    def applied(self, live: Mapping[str, Any], config: Mapping[str, Any], manager: str,
                subresource: str | None, force: bool, now: float
                ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The object ``manager``'s apply of ``config`` makes of ``live``, and its
        managedFields; raises :class:`ApplyConflict` unless ``force``."""
        entries = _entries(live)
        if not entries:  # what an object no one manages holds is "before-first-apply"'s
            entries = _decoded(self.updated(None, dict(live), _BEFORE_FIRST_APPLY, subresource,
                                            now))
        mine_before = next((e.paths for e in entries if e.identity == (
            manager, "Apply", subresource or "")), set())
        applied = self._owned(leaves(config, self.shape), subresource)
        merged = merge(live, config, self.shape)
        added, removed, modified = compare(live, merged, self.shape)
        touched = self._owned(added | modified, subresource)
        conflicts = [(entry, path) for entry in entries
                     if entry.identity != (manager, "Apply", subresource or "")
                     for path in sorted(entry.paths & touched, key=path_string)]
        if conflicts and not force and manager == _KUBECTL:
            allowed = self._last_applied(live)
            conflicts = [(entry, path) for entry, path in conflicts if path not in allowed]
        if conflicts and not force:
            raise _conflict_error(conflicts)
        for entry in entries:
            if entry.identity != (manager, "Apply", subresource or ""):
                entry.give_up(touched | self._owned(removed, subresource))
        # a member stays while anyone owns it or something in it: the others, or the
        # applier itself (a map it owned as a whole before and now owns members of)
        kept = applied.union(*(e.paths for e in entries
                               if e.identity != (manager, "Apply", subresource or "")))
        gone: list[Path] = []
        for path in sorted(mine_before - applied, key=len):
            if any(path[:len(g)] == g for g in gone):
                continue  # its parent goes with all it holds
            if not any(o[:len(path)] == path for o in kept):
                _remove(merged, path, self.shape)
                gone.append(path)
        # kube-apiserver stamps the applier's time only if its apply changed the object, so a
        # repeated apply changes nothing at all (no new resourceVersion, no watch event)
        changed = _content(merged) != _content(live)
        self._own(entries, manager, "Apply", subresource, now if changed else None).take(
            applied, only=True)
        if manager == _KUBECTL:
            _sync_last_applied(merged, config)
        return merged, self._dump(entries)

    def _last_applied(self, live: Mapping[str, Any]) -> set[Path]:
        """The paths of ``live``'s client-side last-applied configuration (none if absent
        or unreadable): ``kubectl apply --server-side`` takes them over without conflict."""
        text = ((live.get("metadata") or {}).get("annotations") or {}).get(_LAST_APPLIED)
        if not isinstance(text, str):
            return set()
        try:
            last = orjson.loads(text)
        except orjson.JSONDecodeError:
            return set()
        return self._owned(leaves(last, self.shape), None) if isinstance(last, dict) else set()


def _sync_last_applied(merged: dict[str, Any], config: Mapping[str, Any]) -> None:
    """kube-apiserver's lastAppliedUpdater: an apply by ``kubectl`` rewrites an existing
    last-applied annotation as the applied configuration (without that annotation),
    encoded as Go encodes it (sorted keys, HTML-escaped, a newline at the end)."""
    annotations = (merged.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, dict) or _LAST_APPLIED not in annotations:
        return
    meta = dict(config.get("metadata") or {})
    applied_annotations = meta.get("annotations")
    if isinstance(applied_annotations, Mapping) and _LAST_APPLIED in applied_annotations:
        meta["annotations"] = {k: v for k, v in applied_annotations.items()
                               if k != _LAST_APPLIED}
    encoded = orjson.dumps({**config, "metadata": meta}, option=orjson.OPT_SORT_KEYS).decode()
    for char, escaped in _GO_ESCAPES:
        encoded = encoded.replace(char, escaped)
    annotations[_LAST_APPLIED] = encoded + "\n"


_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_BEFORE_FIRST_APPLY = "before-first-apply"
_KUBECTL = "kubectl"  # the only manager kube-apiserver's last-applied handling serves
_GO_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
               ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def _content(obj: Mapping[str, Any]) -> Any:
    """``obj`` but for the metadata the server keeps (managedFields, resourceVersion)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items()
            if k not in ("managedFields", "resourceVersion")}
    return {**obj, "metadata": meta}


def _conflict_error(conflicts: list[tuple[_Entry, Path]]) -> ApplyConflict:
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {e.printed()}",
               "field": path_string(p)} for e, p in conflicts]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.printed()}: " \
                  f"{path_string(path)}"
    else:
        lines = []
        by_manager: dict[str, tuple[_Entry, list[Path]]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(entry.sort_key(), (entry, []))[1].append(path)
        for key in sorted(by_manager):
            entry, paths = by_manager[key]
            lines.append(f"conflicts with {entry.printed()}:")
            lines.extend(f"- {path_string(p)}" for p in paths)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApplyConflict(409, "Conflict", message, {"causes": causes})


# -- merging and removing by shape -----------------------------------------------------------

def merge(live: Any, config: Any, shape: Shape) -> Any:
    """``config`` merged into ``live``: maps member by member, associative lists by key,
    sets as unions; anything else (scalars, atomic lists) is replaced."""
    if isinstance(live, Mapping) and isinstance(config, Mapping) and not shape.atomic:
        out = dict(live)
        for k, v in config.items():
            out[k] = merge(live[k], v, shape.child(k)) if k in live else v
        return out
    if isinstance(live, list) and isinstance(config, list) and shape.list_type in ("map",
                                                                                   "set"):
        out_list = list(live)
        for item in config:
            step = _element(item, shape)
            at = None if step is None else _index(out_list, step, shape)
            if at is None:
                out_list.append(item)
            elif shape.list_type == "map":
                out_list[at] = merge(out_list[at], item, shape.item())
        return out_list
    return config


def _remove(obj: Any, path: Path, shape: Shape) -> None:
    """Delete the member a path names, if it is there; a map or list it leaves empty goes
    too (as structured-merge-diff leaves no empty container behind), but not metadata."""
    trail: list[tuple[Any, Step, Shape]] = []  # (container, step into it, its shape)
    node, node_shape = obj, shape
    for step in path:
        trail.append((node, step, node_shape))
        if step[0] == "f" and isinstance(node, dict) and step[1] in node:
            node, node_shape = node[step[1]], node_shape.child(step[1])
        elif isinstance(node, list) and (at := _index(node, step, node_shape)) is not None:
            node, node_shape = node[at], node_shape.item()
        else:
            return
    for depth in range(len(trail) - 1, -1, -1):
        container, step, container_shape = trail[depth]
        if step[0] == "f":
            del container[step[1]]
        else:
            del container[_index(container, step, container_shape) or 0]
        if container or (depth <= 1 and path[0] == ("f", "metadata")) or depth == 0:
            return


def _index(items: list[Any], step: Step, shape: Shape) -> int | None:
    return next((i for i, item in enumerate(items)
                 if (found := _element(item, shape)) is not None and found == step),
                None)
