"""The CNClaim operator's generated RBAC: up to date, sufficient, and minimal.

``manifests/`` is generated from ``examples.cnclaim.operator:deployed_operator``
(COMMAND); the first test fails when the committed files differ from what the
generator writes now.

On both backends (the in-process server's RBAC authorizer decides as
kube-apiserver's does) the operator runs its whole scenario as a ServiceAccount bound to exactly the
generated rules, and then:

(a) no request of its client was Forbidden, and every generated grant
    (verb, resource) was used by a request the authorizer let through, so
    without it that request would be Forbidden (RBAC is deterministic);
(b) rules are taken away one at a time and the scenario played again until
    the first 403, which must be for the grant taken away: Forbidden seen for
    real, for as many grants as fit in the time budget. The ``finalizers``
    grants are proven by a test of their own: no request names them, the
    OwnerReferencesPermissionEnforcement admission plugin checks them when a
    Pod or claim is created with its owner's controller reference. That
    plugin is on in the pytest plugin's servers (in-process and the session's
    control plane) and off in kube-apiserver's defaults; where the cluster
    does not run it (a probe says so) that test is skipped.

The scenario is followed by two short steps that make the rarer requests
happen every time: a Pod labelled as claimed by a claim that does not exist
(the pool reads that claim live, then releases the Pod) and a malformed
claim changed once (its InvalidSpec Event repeats: a patch of its count).
"""

from __future__ import annotations

import contextlib
import functools
import shlex
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from examples.cnclaim import OperatorOptions, build_operator
from examples.cnclaim.demo.run import play_with_operator
from examples.cnclaim.demo.scenario import POOL, Progress
from examples.cnclaim.operator import MANIFESTS
from examples.cnclaim.resources import (
    CLAIMED_BY_LABEL,
    CNCLAIMS,
    CNCLAIMSETS,
    CNPOOLS,
    PHASE_LABEL,
    POOL_LABEL,
    PodPhase,
    name_of,
)
from reconcilekit import Client, RequestRecord
from reconcilekit.__main__ import main
from reconcilekit.kinds import EVENTS, LEASES, PODS, SELF_SUBJECT_ACCESS_REVIEWS
from reconcilekit.testing import Cluster, NodeSimulator

from cnclaim_env import cnclaim_client, eventually, service_account_kubeconfig

COMMAND = ("python -m reconcilekit manifests examples.cnclaim.operator:deployed_operator "
           "--out examples/cnclaim/manifests --image cnclaim-operator:dev --replicas 2 "
           "-- --in-cluster --leader-elect")
ACCOUNT = "cnclaim-operator"
BUDGET = 60.0  # seconds of (b) on the kube pass
Grant = tuple[str, str, str]  # (verb, group, resource[/subresource])


def test_the_committed_manifests_are_what_the_generator_writes(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """COMMAND with ``--check``, run where it is run (the repository's root), finds every
    file up to date, or names the stale ones and the command."""
    monkeypatch.chdir(MANIFESTS.parents[2])
    words = shlex.split(COMMAND)[3:]
    at = words.index("--")
    assert main([*words[:at], "--check", *words[at:]]) == 0, capsys.readouterr().err
    assert sorted(p.name for p in MANIFESTS.glob("*.yaml")) == [
        "crds.yaml", "deployment.yaml", "kustomization.yaml", "rbac.yaml", "webhook.yaml"]


# -- the generated rules, and the same rules less one grant ------------------------------------

def _roles() -> dict[str, list[dict[str, Any]]]:
    """The generated rules: ``cluster`` (the ClusterRole) and ``leases`` (the Role)."""
    docs = [d for d in yaml.safe_load_all((MANIFESTS / "rbac.yaml").read_text()) if d]
    [cluster] = [d["rules"] for d in docs if d["kind"] == "ClusterRole"]
    [leases] = [d["rules"] for d in docs if d["kind"] == "Role"]
    return {"cluster": cluster, "leases": leases}


def _grants(rules: list[dict[str, Any]]) -> list[Grant]:
    return [(verb, group, resource) for rule in rules for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]]


def _without(rules: list[dict[str, Any]], grant: Grant) -> list[dict[str, Any]]:
    verb, group, resource = grant
    out = []
    for rule in rules:
        if group not in rule["apiGroups"] or resource not in rule["resources"] \
                or verb not in rule["verbs"]:
            out.append(rule)
            continue
        others = [r for r in rule["resources"] if r != resource]
        if others:
            out.append({**rule, "resources": others})
        verbs = [v for v in rule["verbs"] if v != verb]
        if verbs:
            out.append({**rule, "resources": [resource], "verbs": verbs})
    return out


def _label(group: str, resource: str) -> str:
    """A rule's resource as RequestRecord names it: ``cnclaims.core.matrixorigin.io/status``."""
    plural, _, sub = resource.partition("/")
    name = f"{plural}.{group}" if group else plural
    return f"{name}/{sub}" if sub else name


# -- running the operator as its ServiceAccount -------------------------------------------------

class Recording:
    """(verb, resource) -> the statuses the operator's requests got; the first 403."""

    def __init__(self) -> None:
        self.sent: dict[tuple[str, str], set[int | None]] = {}
        self.first_forbidden: tuple[str, str] | None = None
        self.forbidden = anyio.Event()

    def __call__(self, record: RequestRecord) -> None:
        self.sent.setdefault((record.verb, record.resource), set()).add(record.status)
        if record.status == 403 and self.first_forbidden is None:
            self.first_forbidden = (record.verb, record.resource)
            self.forbidden.set()


async def _account_client(apiserver: Cluster, tmp_path: Path) -> Client:
    path = await service_account_kubeconfig(apiserver, apiserver.namespace, ACCOUNT,
                                            tmp_path / "operator.kubeconfig")
    return await Client.from_kubeconfig(path)


async def _put(apiserver: Cluster, path: str, body: dict[str, Any]) -> None:
    answer = await apiserver.request("PUT", path, json=body)
    if answer.status == 404:
        answer = await apiserver.request("POST", path.rsplit("/", 1)[0], json=body)
    assert answer.status in (200, 201), answer


class Roles:
    """The generated rules bound to the test's ServiceAccount: the ClusterRole's under a
    name of the test's own, the leader election Role's in the test's namespace (where
    the operator's Lease then lives)."""

    def __init__(self, apiserver: Cluster, probe: Client) -> None:
        self.apiserver, self.probe, self.ns = apiserver, probe, apiserver.namespace
        self.name = f"cnclaim-rbac-proof-{self.ns}"
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        self.cluster_role = f"{rbac}/clusterroles/{self.name}"
        self.cluster_binding = f"{rbac}/clusterrolebindings/{self.name}"
        self.role = f"{rbac}/namespaces/{self.ns}/roles/{self.name}"
        self.role_binding = f"{rbac}/namespaces/{self.ns}/rolebindings/{self.name}"

    async def bind(self) -> None:
        subject = [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": self.ns}]
        for path, kind in ((self.cluster_binding, "ClusterRole"), (self.role_binding, "Role")):
            await _put(self.apiserver, path, {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": f"{kind}Binding",
                "metadata": {"name": self.name}, "subjects": subject,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind,
                            "name": self.name}})

    async def grant(self, roles: dict[str, list[dict[str, Any]]],
                    removed: Grant | None = None) -> None:
        """Make the roles ``roles`` say, and wait until the authorizer agrees."""
        for path, kind, key in ((self.cluster_role, "ClusterRole", "cluster"),
                                (self.role, "Role", "leases")):
            await _put(self.apiserver, path, {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                "metadata": {"name": self.name}, "rules": roles[key]})
        # the authorizer reads each kind of role from an informer of its own: one kept
        # grant of each role in force says both are
        for key in ("cluster", "leases"):
            kept = next(g for g in _grants(roles[key]) if g != removed)
            await eventually(functools.partial(self.allowed, kept), within=30,
                             what=f"{kept} allowed")
        if removed is not None:
            async def denied() -> bool:
                return not await self.allowed(removed)

            await eventually(denied, within=30, what=f"{removed} denied")

    async def allowed(self, grant: Grant) -> bool:
        verb, group, resource = grant
        plural, _, sub = resource.partition("/")
        attributes = {"namespace": self.ns, "verb": verb, "group": group,
                      "resource": plural, "subresource": sub}
        if plural == "leases" and verb in ("get", "update"):
            attributes["name"] = "cnclaim-operator"
        review = await self.probe.create(SELF_SUBJECT_ACCESS_REVIEWS, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes}})
        return bool(review["status"].get("allowed"))

    async def delete(self) -> None:
        for path in (self.cluster_binding, self.cluster_role):
            await self.apiserver.request("DELETE", path)


async def _play(apiserver: Cluster, client: Client, operator: Client) -> None:
    """The scenario, then the two steps that make the rarer requests happen."""
    ns = apiserver.namespace
    manager = build_operator(operator, OperatorOptions(
        namespace=ns, http_addr=None, leader_election=True, leader_election_namespace=ns))
    async with NodeSimulator(client, nodes=3, namespace=ns):
        await play_with_operator(client, manager, ns, step_timeout=30,
                                 progress=Progress(lambda _: None))
    manager = build_operator(operator, OperatorOptions(
        namespace=ns, http_addr=None, leader_election=True, leader_election_namespace=ns))
    async with manager:
        await _orphan(client, ns)
        await _repeated_event(client, ns)
        await manager.events.flush()


async def _orphan(client: Client, ns: str) -> None:
    """A Pod of the pool labelled as held by a claim that does not exist: released."""
    [pod, *_] = (await client.list(PODS, ns, label_selector=f"{POOL_LABEL}={POOL}"))["items"]
    await client.patch(PODS, name_of(pod), {"metadata": {"labels": {
        PHASE_LABEL: PodPhase.BOUND, CLAIMED_BY_LABEL: "ghost"}}}, ns)

    async def released() -> bool:
        try:
            labels = (await client.get(PODS, name_of(pod), ns))["metadata"].get("labels") or {}
        except Exception:  # recycled already
            return True
        return CLAIMED_BY_LABEL not in labels

    await eventually(released, within=30, what="the orphaned Pod released")


async def _repeated_event(client: Client, ns: str) -> None:
    """A malformed claim (the webhook is off), changed once: its InvalidSpec Event twice."""
    await client.create(CNCLAIMS, {
        "apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
        "metadata": {"name": "malformed"},
        "spec": {"selector": {"matchExpressions": [{"key": "zone", "operator": "In"}]}}}, ns)

    async def count() -> int:
        events = (await client.list(EVENTS, ns, field_selector=(
            "involvedObject.name=malformed,reason=InvalidSpec")))["items"]
        return max((int(e.get("count") or 1) for e in events), default=0)

    await eventually(count, within=30, what="the InvalidSpec Event")
    await client.patch(CNCLAIMS, "malformed", {"metadata": {"annotations": {"seen": "1"}}}, ns)
    await eventually(lambda: _at_least(count, 2), within=30, what="the Event repeated")
    await client.delete(CNCLAIMS, "malformed", ns)


async def _at_least(count: Any, n: int) -> bool:
    return bool(await count() >= n)


async def _clean(apiserver: Cluster, client: Client) -> None:
    """Remove what a (cut short) run left in the namespace: claims' finalizers first."""
    ns = apiserver.namespace
    for claim in (await client.list(CNCLAIMS, ns))["items"]:
        await client.patch(CNCLAIMS, name_of(claim), {"metadata": {"finalizers": None}}, ns)
    for resource in (CNCLAIMSETS, CNCLAIMS, CNPOOLS, PODS, LEASES, EVENTS):
        await apiserver.request("DELETE", resource.path(namespace=ns),
                                json={"gracePeriodSeconds": 0})

    async def empty() -> bool:
        for resource in (CNCLAIMSETS, CNCLAIMS, CNPOOLS, PODS):
            if (await client.list(resource, ns))["items"]:
                return False
        return True

    await eventually(empty, within=60, what="the namespace emptied")


@asynccontextmanager
async def _proof_setup(apiserver: Cluster, tmp_path: Path
                       ) -> AsyncIterator[tuple[Client, Client, Roles]]:
    async with cnclaim_client(apiserver) as client:
        made = await apiserver.request(
            "POST", f"/api/v1/namespaces/{apiserver.namespace}/serviceaccounts",
            json={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ACCOUNT}})
        assert made.status == 201, made
        async with await _account_client(apiserver, tmp_path) as probe:
            roles = Roles(apiserver, probe)
            for path in (roles.cluster_role, roles.cluster_binding):
                apiserver.delete_at_end(path)
            try:
                await roles.bind()
                yield client, probe, roles
            finally:
                await roles.delete()


async def test_the_generated_rbac_is_enough_and_every_grant_is_used(
        apiserver: Cluster, tmp_path: Path) -> None:
    """(a): the whole scenario as the ServiceAccount, no 403; each grant used."""
    async with _proof_setup(apiserver, tmp_path) as (client, _, roles):
        generated = _roles()
        await roles.grant(generated)
        recording = Recording()
        async with await _account_client(apiserver, tmp_path) as operator:
            operator.add_request_observer(recording)
            await _play(apiserver, client, operator)
    assert recording.first_forbidden is None, recording.sent
    authorized = {key for key, statuses in recording.sent.items()
                  if statuses - {401, 403, None}}
    unused = [grant for rules in generated.values() for grant in _grants(rules)
              if not _finalizers(grant)  # checked at admission: (b) proves them
              and (grant[0], _label(grant[1], grant[2])) not in authorized]
    assert not unused, f"generated grants no request used: {unused}"


def _finalizers(grant: Grant) -> bool:
    """A grant on a ``finalizers`` subresource: checked at admission, by
    OwnerReferencesPermissionEnforcement only."""
    return grant[2].endswith("/finalizers")


@pytest.mark.timeout(300)
async def test_without_any_one_grant_the_operator_is_forbidden(
        apiserver: Cluster, tmp_path: Path) -> None:
    """(b): each grant but the finalizers ones taken away in turn; the scenario until the
    first 403, which names it. As many grants as fit in BUDGET."""
    await _prove_needed(apiserver, tmp_path, lambda grant: not _finalizers(grant))


@pytest.mark.timeout(300)
@pytest.mark.admission_plugin("OwnerReferencesPermissionEnforcement")
async def test_without_a_finalizers_grant_creating_an_owned_object_is_forbidden(
        apiserver: Cluster, tmp_path: Path) -> None:
    """(b) for the finalizers grants: each taken away in turn, the first 403 is a create
    refused at admission (an owner reference that blocks its owner's deletion)."""
    await _prove_needed(apiserver, tmp_path, _finalizers)


async def _prove_needed(apiserver: Cluster, tmp_path: Path,
                        chosen: Callable[[Grant], bool]) -> None:
    """Each ``chosen`` grant taken away in turn, the scenario until the first 403, which
    must be for it; as many as fit in BUDGET, at least one."""
    async with _proof_setup(apiserver, tmp_path) as (client, _, roles):
        generated = _roles()
        trials = [(key, grant) for key in ("leases", "cluster")
                  for grant in _grants(generated[key]) if chosen(grant)]
        assert trials, "no generated grant to take away"
        trials.sort(key=lambda t: _lateness(t[1]))  # the earliest 403s first
        started, proven, left = time.monotonic(), [], []
        for key, grant in trials:
            if time.monotonic() - started > BUDGET:
                left.append(grant)
                continue
            await roles.grant({**generated, key: _without(generated[key], grant)}, grant)
            seen = await _until_forbidden(apiserver, client, tmp_path)
            await _clean(apiserver, client)
            verb, group, resource = grant
            if _finalizers(grant):
                assert seen is not None and seen[0] == "create", (grant, seen)
            else:
                assert seen == (verb, _label(group, resource)), (grant, seen)
            proven.append(grant)
    print(f"\n(b): {len(proven)} of {len(trials)} grants proven needed in "
          f"{time.monotonic() - started:.0f}s; not tried (budget): {left}")
    assert proven


def _lateness(grant: Grant) -> int:
    """How late in a run a grant is first needed, roughly (to order the trials)."""
    verb, _, resource = grant
    if resource == "events" and verb == "patch":
        return 3  # the last step
    if verb == "delete" or (verb == "get" and resource != "leases"):
        return 2
    return 0


async def _until_forbidden(apiserver: Cluster, client: Client,
                           tmp_path: Path) -> tuple[str, str] | None:
    recording = Recording()
    async with await _account_client(apiserver, tmp_path) as operator:
        operator.add_request_observer(recording)
        async with anyio.create_task_group() as tg:
            async def play() -> None:
                with contextlib.suppress(Exception):  # a step failing after the 403
                    await _play(apiserver, client, operator)
                with anyio.move_on_after(5):  # the 403 may be on its way to the observer
                    await recording.forbidden.wait()
                tg.cancel_scope.cancel()

            async def stop_at_forbidden() -> None:
                await recording.forbidden.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(play)
            tg.start_soon(stop_at_forbidden)
    return recording.first_forbidden
