"""The apiextensions server's own loops: a CRD served and Established at once, and a
deleted CRD's custom resources deleted before the CRD goes.

* Establishing: a created CRD is served at once and its status gains the
  NamesAccepted and Established conditions (a second write, as on a cluster);
  ``storedVersions`` keeps every version ever stored.
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


class CRDController:
    """Serves CRDs as they are written and removes them once their resources are gone."""

    def __init__(self, storage: Storage, registry: Registry) -> None:
        self.storage = storage
        self.registry = registry

    def serve(self, crd: dict[str, Any]) -> None:
        """Serve ``crd``'s versions and mark it NamesAccepted and Established."""
        spec = crd["spec"]
        served = crd_types(crd)
        for rtype in served:
            self.registry.add(rtype)
        if served:  # the table's type is the storage version's: objects are written at it
            stored = next((v["name"] for v in spec["versions"] if v.get("storage")), None)
            chosen = next((t for t in served if t.resource.version == stored), served[-1])
            self.storage.table(chosen).serve_as(chosen)
        names = dict(spec["names"])
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", f"{names['kind']}List")
        old = crd.get("status") or {}
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

    def finish_if_empty(self, crd_name: str) -> None:
        """Remove a CRD being deleted once no custom resource of it is left."""
        crds = self.storage.tables.get(("apiextensions.k8s.io", "customresourcedefinitions"))
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
