"""kube-controller-manager's clusterrole-aggregation controller: an aggregated
ClusterRole's rules are the rules of the ClusterRoles its selectors pick.

A ClusterRole with an ``aggregationRule`` gets, in the order of its selectors
and then of the picked roles' names, every rule of every other ClusterRole
whose labels match one of its ``clusterRoleSelectors`` (a rule once), written
by the ``clusterrole-aggregation-controller`` field manager right after any
ClusterRole is written or removed. This is how ``admin``, ``edit`` and
``view`` hold their rules, and how a CRD's ``aggregate-to-view`` role reaches
them.
"""

from __future__ import annotations

from typing import Any

from ...._foundations.selectors import LabelSelector, SelectorError
from ..machinery.resources import Registry, ResourceType
from ..registry.generic_store import Storage

__all__ = ["ClusterRoleAggregator", "MANAGER"]

MANAGER = "clusterrole-aggregation-controller"
_GROUP = "rbac.authorization.k8s.io"


class ClusterRoleAggregator:
    """Keeps every aggregated ClusterRole's rules up to date."""

    def __init__(self, storage: Storage, registry: Registry) -> None:
        self.storage = storage
        rtype = registry.lookup(_GROUP, "v1", "clusterroles")
        assert rtype is not None
        self._rtype: ResourceType = rtype

    def changed(self, role: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        """After ``role`` was written (``old``: before) or removed: bring in line the
        aggregated roles that pick it, or picked it, and ``role`` if it is one."""
        roles = self.storage.table(self._rtype).objects
        labels = [r["metadata"].get("labels") or {} for r in (role, old) if r is not None]
        for name, aggregated, rule in sorted(
                (name, r, r["aggregationRule"]) for (_, name), r in roles.items()
                if isinstance(r.get("aggregationRule"), dict)
                and not r["metadata"].get("deletionTimestamp")):
            if aggregated is role or any(s.matches(ls) for s in _selectors(rule)
                                         for ls in labels):
                self._aggregate(name, aggregated, rule, roles)

    def _aggregate(self, name: str, role: dict[str, Any], rule: dict[str, Any],
                   roles: dict[tuple[str, str], dict[str, Any]]) -> None:
        picked: list[Any] = []
        for selector in _selectors(rule):
            for (_, other), candidate in sorted(roles.items()):
                if other != name and selector.matches(candidate["metadata"].get("labels") or {}):
                    picked.extend(r for r in candidate.get("rules") or () if r not in picked)
        if picked != (role.get("rules") or []):
            self.storage.update(self._rtype, "", name, {**role, "rules": picked},
                                subresource=None, manager=MANAGER, check_rv=False)


def _selectors(rule: dict[str, Any]) -> list[LabelSelector]:
    selectors = []
    for raw in rule.get("clusterRoleSelectors") or ():
        try:
            selectors.append(LabelSelector.from_dict(raw))
        except SelectorError:
            continue
    return selectors
