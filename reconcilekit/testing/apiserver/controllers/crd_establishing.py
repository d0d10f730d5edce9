"""The apiextensions server's own loops: a CRD served and Established at once, and a
deleted CRD's custom resources deleted before the CRD goes.

* Establishing: a created CRD is served at once and its status gains the
  NamesAccepted and Established conditions (a second write, as on a cluster);
  ``storedVersions`` keeps every version ever stored.
* Naming: a CRD whose plural, singular or short names, kind or list kind are
  already accepted for another CRD of its group is not served: NamesAccepted
  is False with kube-apiserver's reason (``PluralConflict``, ...,
  ``ListKindConflict``: the last conflict found, in that order) and message
  (``"Widget" is already in use``), and Established False (``NotAccepted``)
  until the conflict goes (it is looked at again when a CRD of the group goes).
* Cleanup: a deleted CRD deletes its custom resources (those with finalizers
  wait for them), and stops being served once they are gone.
"""

from __future__ import annotations

from typing import Any

from ..apiextensions.definitions import crd_types
from ..machinery.resources import Registry, ResourceType
from ..machinery.unstructured import timestamp
from ..registry.generic_store import Storage
from .cleanup import delete_if_present

__all__ = ["CRDController"]

_CRD_TABLE = ("apiextensions.k8s.io", "customresourcedefinitions")


class CRDController:
    """Serves CRDs as they are written and removes them once their resources are gone."""

    def __init__(self, storage: Storage, registry: Registry) -> None:
        self.storage = storage
        self.registry = registry

    def serve(self, crd: dict[str, Any]) -> None:
        """Serve ``crd``'s versions and mark it NamesAccepted and Established."""
        spec = crd["spec"]
        old = crd.get("status") or {}
        conflict = self._name_conflict(crd)
        if conflict is not None and _condition_status(crd, "Established") != "True":
            self._refuse(crd, *conflict)
            return
        served = crd_types(crd)
        for rtype in served:
            self.registry.add(rtype)
        if served:  # the table's type is the storage version's: objects are written at it
            stored = next((v["name"] for v in spec["versions"] if v.get("storage")), None)
            chosen = next((t for t in served if t.resource.version == stored), served[-1])
            self.storage.table(chosen).serve_as(chosen)
        names = _requested_names(crd)
        since = {c.get("type"): c.get("lastTransitionTime")
                 for c in old.get("conditions") or () if c.get("status") == "True"}
        now = timestamp(self.storage.now())
        conditions = [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found",
             "lastTransitionTime": since.get("NamesAccepted") or now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted",
             "lastTransitionTime": since.get("Established") or now},
        ]
        stored = [v["name"] for v in spec["versions"] if v.get("storage")]
        previous = [v for v in old.get("storedVersions") or () if v not in stored]
        status = {"conditions": conditions, "acceptedNames": names,
                  "storedVersions": previous + stored}
        self.storage.replace_status(self._crd_type(), "", crd["metadata"]["name"], status)

    def _name_conflict(self, crd: dict[str, Any]) -> tuple[str, str] | None:
        """The reason and message of the last of ``crd``'s names another CRD of its group
        has accepted, in kube-apiserver's order; None when there is none."""
        group, name = crd["spec"]["group"], crd["metadata"]["name"]
        resources: set[str] = set()
        kinds: set[str] = set()
        for other in self._crds():
            if other["metadata"]["name"] == name or other["spec"]["group"] != group:
                continue
            accepted = (other.get("status") or {}).get("acceptedNames") or {}
            resources.update(n for n in (accepted.get("plural"), accepted.get("singular"),
                                         *(accepted.get("shortNames") or ())) if n)
            kinds.update(n for n in (accepted.get("kind"), accepted.get("listKind")) if n)
        names = _requested_names(crd)
        checks = [("PluralConflict", names["plural"], resources),
                  ("SingularConflict", names["singular"], resources),
                  *(("ShortNamesConflict", short, resources)
                    for short in names.get("shortNames") or ()),
                  ("KindConflict", names["kind"], kinds),
                  ("ListKindConflict", names["listKind"], kinds)]
        found = [(reason, f'"{value}" is already in use')
                 for reason, value, taken in checks if value in taken]
        return found[-1] if found else None

    def _refuse(self, crd: dict[str, Any], reason: str, message: str) -> None:
        old = crd.get("status") or {}
        now = timestamp(self.storage.now())
        status = {"conditions": [
            {"type": "NamesAccepted", "status": "False", "reason": reason, "message": message,
             "lastTransitionTime": now},
            {"type": "Established", "status": "False", "reason": "NotAccepted",
             "message": "not all names are accepted", "lastTransitionTime": now}],
            "acceptedNames": old.get("acceptedNames") or {"plural": "", "kind": ""},
            "storedVersions": old.get("storedVersions") or []}
        self.storage.replace_status(self._crd_type(), "", crd["metadata"]["name"], status)

    def _crds(self) -> list[dict[str, Any]]:
        table = self.storage.tables.get(_CRD_TABLE)
        return list(table.objects.values()) if table is not None else []

    def delete_resources(self, crd: dict[str, Any]) -> None:
        """A CRD's deletion started: delete its custom resources, then the CRD if none is left."""
        spec = crd["spec"]
        owned = self.storage.tables.get((spec["group"], spec["names"]["plural"]))
        if owned is not None:
            for (ns, name) in list(owned.objects):
                delete_if_present(self.storage, owned, ns, name)
        self.finish_if_empty(crd["metadata"]["name"])

    def removed(self, crd: dict[str, Any]) -> None:
        """The CRD is gone: its versions are no longer served, its table is dropped."""
        for rtype in crd_types(crd):
            r = rtype.resource
            self.registry.remove(r.group, r.version, r.plural)
        owned = self.storage.tables.get((crd["spec"]["group"], crd["spec"]["names"]["plural"]))
        if owned is not None:
            self.storage.drop_table(owned)
        for other in self._crds():  # a name it held may now be free for another
            if other["spec"]["group"] == crd["spec"]["group"] and _condition_status(
                    other, "NamesAccepted") == "False":
                self.serve(other)

    def finish_if_empty(self, crd_name: str) -> None:
        """Remove a CRD being deleted once no custom resource of it is left."""
        crds = self.storage.tables.get(_CRD_TABLE)
        crd = crds.objects.get(("", crd_name)) if crds else None
        if crd is None or not crd["metadata"].get("deletionTimestamp"):
            return
        spec = crd["spec"]
        table = self.storage.tables.get((spec["group"], spec["names"]["plural"]))
        if table is None or not table.objects:
            self.storage.remove_now(self._crd_type(), "", crd_name)

    def _crd_type(self) -> ResourceType:
        rtype = self.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert rtype is not None
        return rtype


def _requested_names(crd: dict[str, Any]) -> dict[str, Any]:
    """The CRD's ``spec.names`` with the singular and list kind defaulted."""
    names = dict(crd["spec"]["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", f"{names['kind']}List")
    return names


def _condition_status(crd: dict[str, Any], condition_type: str) -> str | None:
    """The status of the CRD's condition of ``condition_type``; None when it has none."""
    for condition in (crd.get("status") or {}).get("conditions") or ():
        if condition.get("type") == condition_type:
            return str(condition.get("status"))
    return None
