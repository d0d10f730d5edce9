"""Whether a cluster runs an optional admission plugin, found by what it does.

kube-apiserver tells no client which admission plugins it runs (they are
flags of its command line); what a cluster runs shows only in what it
admits. A probe sends the request the plugin would refuse, as a dry run
(``dryRun=All``: admission runs, nothing is stored), and reads the answer:
refused in the plugin's words, the plugin runs; admitted, it does not.

``OwnerReferencesPermissionEnforcement`` (off in kube-apiserver unless
``--enable-admission-plugins`` names it): a user who may create ConfigMaps
in the namespace and do nothing else there (a Role and RoleBinding made for
the probe and deleted after it, the user impersonated) creates a ConfigMap
whose owner reference sets ``blockOwnerDeletion``. The plugin refuses it
(*cannot set blockOwnerDeletion if an ownerReference refers to a resource
you can't set finalizers on*); without the plugin it is admitted.

Guarantees:
  * A probe leaves nothing behind: the dry run stores nothing, and the Role
    and RoleBinding it made are deleted before it returns (a namespace being
    deleted takes them anyway).
  * Until the authorizer has seen the new RoleBinding the dry run is refused
    by RBAC (*cannot create resource*); that answer is retried, for up to
    ``within`` seconds. Any other answer (the user may not impersonate, the
    namespace is gone) raises :class:`AdmissionProbeError` naming it.
  * :class:`AdmissionPlugins` probes each plugin once and keeps the answer:
    a pytest session asks the same cluster each time.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

from ._requests import Answer, Requests

__all__ = ["PROBED_PLUGINS", "AdmissionPlugins", "AdmissionProbeError",
           "admission_plugin_enabled"]

_RBAC: Final = "/apis/rbac.authorization.k8s.io/v1"
_POLL: Final = 0.05
_OWNER_REFS_REFUSAL: Final = "cannot set blockOwnerDeletion"


class AdmissionProbeError(RuntimeError):
    """A probe got an answer that says nothing about the plugin; the message quotes it."""


Probe = Callable[[Requests, str, float], Awaitable[bool]]


def _message(answer: Answer) -> str:
    return str(answer.body.get("message", "")) if isinstance(answer.body, dict) else ""


def _rbac_denied(answer: Answer) -> bool:
    return answer.status == 403 and "cannot create resource" in _message(answer)


async def _owner_references_permission_enforcement(cluster: Requests, namespace: str,
                                                   within: float) -> bool:
    suffix = secrets.token_hex(4)
    name = f"reconcilekit-admission-probe-{suffix}"
    user = f"reconcilekit:admission-probe:{suffix}"
    role = f"{_RBAC}/namespaces/{namespace}/roles"
    binding = f"{_RBAC}/namespaces/{namespace}/rolebindings"
    made: list[str] = []
    try:
        for path, body in (
                (role, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                        "metadata": {"name": name},
                        "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                                   "verbs": ["create"]}]}),
                (binding, {"apiVersion": "rbac.authorization.k8s.io/v1",
                           "kind": "RoleBinding", "metadata": {"name": name},
                           "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                       "kind": "Role", "name": name},
                           "subjects": [{"apiGroup": "rbac.authorization.k8s.io",
                                         "kind": "User", "name": user}]})):
            created = await cluster.request("POST", path, json=body)
            if created.status != 201:
                raise AdmissionProbeError(
                    f"probing OwnerReferencesPermissionEnforcement: creating {path}/{name} "
                    f"answered {created.status}: {created.body}")
            made.append(f"{path}/{name}")
        configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "generateName": "reconcilekit-admission-probe-",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                 "name": f"{name}-owner", "uid": str(uuid.uuid4()),
                                 "blockOwnerDeletion": True}]}}
        answer: Answer | None = None
        with anyio.move_on_after(within):
            while True:  # polling the API server: nothing here can signal RBAC caught up
                answer = await cluster.request(
                    "POST", f"/api/v1/namespaces/{namespace}/configmaps?dryRun=All",
                    json=configmap, headers={"Impersonate-User": user})
                if not _rbac_denied(answer):
                    break
                await anyio.sleep(_POLL)
        assert answer is not None
        if answer.status == 201:
            return False
        if answer.status == 403 and _OWNER_REFS_REFUSAL in _message(answer):
            return True
        raise AdmissionProbeError(
            f"probing OwnerReferencesPermissionEnforcement: a dry-run create of a ConfigMap "
            f"as {user} (allowed to create ConfigMaps in {namespace}"
            + (f", still refused by RBAC after {within:g}s" if _rbac_denied(answer) else "")
            + f") answered {answer.status}: {answer.body}")
    finally:
        for path in reversed(made):
            await cluster.request("DELETE", path)


PROBED_PLUGINS: Final[dict[str, Probe]] = {
    "OwnerReferencesPermissionEnforcement": _owner_references_permission_enforcement,
}


def _check_name(name: str) -> Probe:
    try:
        return PROBED_PLUGINS[name]
    except KeyError:
        raise ValueError(f"no probe for the admission plugin {name!r}; the plugins a probe "
                         f"can find: {', '.join(sorted(PROBED_PLUGINS))}") from None


async def admission_plugin_enabled(cluster: Requests, name: str, *, namespace: str,
                                   within: float = 30.0) -> bool:
    """Whether ``cluster`` runs the admission plugin ``name``, probed in ``namespace`` (which
    must exist) by what it admits (the module docstring). Raises ValueError for a plugin
    no probe knows, :class:`AdmissionProbeError` for an answer that tells nothing."""
    return await _check_name(name)(cluster, namespace, within)


class AdmissionPlugins:
    """The admission plugins of one cluster, each probed once (a pytest session's cache;
    calls for one plugin that overlap may each probe, with the same answer)."""

    def __init__(self) -> None:
        self._known: dict[str, bool] = {}

    async def enabled(self, cluster: Requests, name: str, *, namespace: str) -> bool:
        """:func:`admission_plugin_enabled`, probed on the first call for ``name`` only."""
        if name not in self._known:
            self._known[name] = await admission_plugin_enabled(cluster, name,
                                                               namespace=namespace)
        return self._known[name]

    def known(self) -> dict[str, bool]:
        """What the probes found so far, by plugin name."""
        return dict(self._known)

    def __repr__(self) -> str:
        return f"AdmissionPlugins({self._known})"
