"""Role bindings and PodDisruptionBudgets: what kube-apiserver 1.28 refuses.

Every expectation was recorded on kube-apiserver v1.28.7; the tests run on
both backends. Go pointers in a message are compared masked (their
addresses differ from run to run on kube-apiserver too).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from reconcilekit.testing import Cluster

RBAC = "rbac.authorization.k8s.io"


def _masked(message: str) -> str:
    return re.sub(r"\(0x[0-9a-f]+\)", "(<POINTER>)", message)


async def test_a_role_binding_s_role_cannot_change(apiserver: Cluster) -> None:
    path = f"/apis/{RBAC}/v1/namespaces/{apiserver.namespace}/rolebindings"
    created = await apiserver.request("POST", path, json={
        "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "ann", "apiGroup": RBAC}]})
    assert created.status == 201, created
    refused = await apiserver.request("PATCH", f"{path}/rb", json={"roleRef": {"name": "edit"}},
                                      content_type="application/merge-patch+json")
    assert refused.status == 422, refused
    assert refused.body["message"] == (
        f'RoleBinding.{RBAC} "rb" is invalid: roleRef: Invalid value: rbac.RoleRef{{APIGroup:'
        f'"{RBAC}", Kind:"ClusterRole", Name:"edit"}}: cannot change roleRef')
    subjects = await apiserver.request("PATCH", f"{path}/rb", json={"subjects": [
        {"kind": "Group", "name": "devs", "apiGroup": RBAC}]},
        content_type="application/merge-patch+json")
    assert subjects.status == 200, subjects


_BOTH = ("Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)"
         "(<POINTER>), Selector:(*v1.LabelSelector)(SELECTOR), MaxUnavailable:"
         "(*intstr.IntOrString)(<POINTER>), UnhealthyPodEvictionPolicy:"
         "(*policy.UnhealthyPodEvictionPolicyType)(nil)}: minAvailable and maxUnavailable "
         "cannot be both set")
_PERCENT = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. "
            "'1%',  or '93%', regex used for validation is '[0-9]+%')")


@pytest.mark.parametrize(("spec", "causes"), [
    ({"minAvailable": 1, "maxUnavailable": 1},
     [("spec", _BOTH.replace("SELECTOR", "nil"))]),
    ({"minAvailable": "150%", "maxUnavailable": -1}, [
        ("spec", _BOTH.replace("SELECTOR", "nil")),
        ("spec.minAvailable", 'Invalid value: intstr.IntOrString{Type:1, IntVal:0, '
         'StrVal:"150%"}: must not be greater than 100%'),
        ("spec.maxUnavailable", "Invalid value: -1: must be greater than or equal to 0")]),
    ({"minAvailable": "abc", "maxUnavailable": "-5%", "selector": {"matchLabels": {"a": "b"}}}, [
        ("spec", _BOTH.replace("SELECTOR", "<POINTER>")),
        ("spec.minAvailable", 'Invalid value: intstr.IntOrString{Type:1, IntVal:0, '
         f'StrVal:"abc"}}: {_PERCENT}'),
        ("spec.maxUnavailable", 'Invalid value: intstr.IntOrString{Type:1, IntVal:0, '
         f'StrVal:"-5%"}}: {_PERCENT}')]),
    ({"maxUnavailable": "50%"}, []),
])
async def test_a_disruption_budget_sets_one_bound_within_range(
        apiserver: Cluster, spec: dict[str, Any], causes: list[tuple[str, str]]) -> None:
    got = await apiserver.request(
        "POST", f"/apis/policy/v1/namespaces/{apiserver.namespace}/poddisruptionbudgets"
        "?dryRun=All", json={"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                             "metadata": {"name": "budget"}, "spec": spec})
    if not causes:
        assert got.status == 201, got
        return
    assert got.status == 422, got
    assert [(c["field"], _masked(c["message"])) for c in got.body["details"]["causes"]] \
        == causes
