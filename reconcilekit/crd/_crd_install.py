"""Installing CustomResourceDefinitions and waiting until their kinds can be listed.

An operator that installs its own CRDs at start-up (a ``--install-crds``
flag) must not start its cache before kube-apiserver serves the new kinds:
the CRD's ``Established`` condition turns True a moment before discovery
and the list handler of a new version answer, and a cache started in that
moment logs a 404 and backs off. :func:`install_crds` waits for all three,
as envtest's ``WaitForCRDs`` does, so the informers that start next list
at once.

Guarantees:
  * a CRD missing from the cluster is created; an existing one is left as it
    is, unless ``update=True``, which server-side applies the given
    definition (field manager ``field_manager``, taking over conflicting
    fields): the cluster then serves what the operator was built with;
  * the call returns only when every CRD is ``Established``, and each of its
    served versions answers a list (``limit=1``, every namespace): nothing
    started afterwards sees a 404 for them (an account that may not list every
    namespace takes the ``Established`` condition's word: RBAC answers 403
    before the server looks for the resource);
  * a CRD that can never be established (``NamesAccepted`` False: its plural,
    kind or short names clash with another CRD's) raises at once with the
    API server's words, instead of waiting out the timeout;
  * waiting is on the client's clock, and the whole call is bounded by
    ``wait_seconds`` seconds of it.

Errors: :class:`CRDInstallError` naming the CRD and what went wrong (not
allowed: the account needs ``create`` (and ``patch`` with ``update=True``)
on ``customresourcedefinitions``, or the CRDs must be applied by a cluster
admin; refused as invalid; not established in time).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._cache.served import established, names_clash
from .._client.client import Client
from .._foundations.errors import AlreadyExists, APIError, Forbidden, NotFound
from .._foundations.objects import Resource
from ..kinds.apiextensions_v1 import CUSTOM_RESOURCE_DEFINITIONS, CustomResourceDefinition
from ._custom_kind import CustomKind

__all__ = ["CRDInstallError", "install_crds"]

_FIRST_PAUSE: Final = 0.05  # seconds between looks, doubling up to _LONGEST_PAUSE
_LONGEST_PAUSE: Final = 1.0


class CRDInstallError(RuntimeError):
    """A CRD could not be installed, or was not served in time; the message says which
    and why."""


async def install_crds(client: Client, crds: Iterable[Mapping[str, Any] | CustomKind[Any]],
                       *, wait_seconds: float = 60.0, update: bool = False,
                       field_manager: str = "reconcilekit") -> list[str]:
    """Install ``crds`` (CRD dicts, or :class:`CustomKind` s) and wait until each is served.

    Returns the names of the CRDs this call created (or, with ``update``,
    applied). See the module's docstring for the guarantees.
    """
    definitions = [kind.crd() if isinstance(kind, CustomKind) else dict(kind) for kind in crds]
    for crd in definitions:
        if not isinstance((crd.get("metadata") or {}).get("name"), str):
            raise CRDInstallError("a CustomResourceDefinition needs metadata.name")
    written = [name for crd in definitions
               if (name := await _write(client, crd, update, field_manager)) is not None]
    deadline = client.clock.monotonic() + wait_seconds
    for crd in definitions:
        name = crd["metadata"]["name"]
        try:
            await _wait_served(client, name, deadline, wait_seconds)
        except Forbidden as err:
            raise CRDInstallError(
                f"cannot see whether CRD {name} is established: {err.message}; this account "
                "needs get on customresourcedefinitions") from None
    return written


async def _write(client: Client, crd: dict[str, Any], update: bool,
                 field_manager: str) -> str | None:
    """Create (or apply) ``crd``; its name if this call wrote it."""
    name: str = crd["metadata"]["name"]
    try:
        if update:
            await client.apply(CUSTOM_RESOURCE_DEFINITIONS, crd, field_manager=field_manager,
                               force=True)
            return name
        try:
            await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
            return None
        except NotFound:
            pass
        try:
            await client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
        except AlreadyExists:  # created meanwhile by another replica: theirs is as good
            return None
        return name
    except Forbidden as err:
        verbs = "create and patch" if update else "get and create"
        raise CRDInstallError(
            f"cannot install CRD {name}: {err.message}; this account needs {verbs} on "
            "customresourcedefinitions, or a cluster admin applies the CRDs") from None
    except APIError as err:
        raise CRDInstallError(f"cannot install CRD {name}: {err.message}") from None


async def _wait_served(client: Client, name: str, deadline: float, wait_seconds: float
                       ) -> None:
    """Return once CRD ``name`` is Established and each served version lists."""
    pause = _FIRST_PAUSE
    while True:
        crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
        clash = names_clash(crd)
        if clash is not None:
            raise CRDInstallError(f"CRD {name} cannot be established: {clash}")
        if established(crd) and await _lists(client, crd):
            return
        now = client.clock.monotonic()
        if now >= deadline:
            raise CRDInstallError(f"CRD {name} was not established and served within "
                                  f"{wait_seconds:g}s")
        await client.clock.sleep(min(pause, deadline - now))
        pause = min(pause * 2, _LONGEST_PAUSE)


async def _lists(client: Client, crd: CustomResourceDefinition) -> bool:
    """Whether every served version of ``crd`` answers a list (not a 404 yet)."""
    spec = crd["spec"]
    for version in spec["versions"]:
        if not version["served"]:
            continue
        resource = Resource(spec["group"], version["name"], spec["names"]["kind"],
                            spec["names"]["plural"], spec["scope"] == "Namespaced")
        try:
            await client.list(resource, limit=1)
        except NotFound:
            return False
        except Forbidden:  # RBAC answers before routing: the CRD's Established must do
            return True
    return True
