"""kube-controller-manager's resourcequota controller: a ResourceQuota's status.

``status.hard`` is the quota's ``spec.hard``, and ``status.used`` what the
objects of its namespace use of each resource it limits
(:func:`~..admission.resource_quota.namespace_usage`), counted again after
any write in that namespace, so usage freed by a deletion or a Pod that
finished is given back (kube-controller-manager's replenishment) and what
admission counted is confirmed. Quantities are written in the form of the
hard limit they are counted against.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ..admission.resource_quota import namespace_usage
from ..machinery.quantity import format_quantity, is_binary
from ..storage.versioned_store import ObjKey, TableKey
from .controller_manager import ANY_TABLE, KeysOf, Loop

__all__ = ["ResourceQuotaController"]

Obj = dict[str, Any]


class ResourceQuotaController(Loop):
    name = "resourcequota"

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {ANY_TABLE: self._quotas_of}

    def _quotas_of(self, obj: Obj) -> Iterable[ObjKey]:
        ns = obj["metadata"].get("namespace")
        if not ns:
            return []
        return [key for key in self.ctx.objects("", "resourcequotas") if key[0] == ns]

    async def sync(self, key: ObjKey) -> float | None:
        quota = self.ctx.objects("", "resourcequotas").get(key)
        if quota is None or quota["metadata"].get("deletionTimestamp"):
            return None
        hard = dict((quota.get("spec") or {}).get("hard") or {})
        usage = namespace_usage(self.ctx.storage, key[0], hard)
        used = {k: format_quantity(usage[k], is_binary(hard[k])) for k in sorted(hard)}
        status = {"hard": hard, "used": used} if hard else {}
        if (quota.get("status") or {}) == status:
            return None
        await self.ctx.api.request(
            "PUT", f"/api/v1/namespaces/{key[0]}/resourcequotas/{key[1]}/status",
            {**copy.deepcopy(quota), "status": status})
        return None
