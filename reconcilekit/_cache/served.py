"""Waiting until the API server serves a resource: a kind whose CRD comes later.

A list that answers 404 means the API server does not serve the resource
(a list in a namespace that does not exist answers an empty list, not
404): most often its CustomResourceDefinition is not installed yet, or not
established yet. An informer then waits here, quietly, instead of retrying
the list with a WARNING each time (see :class:`~reconcilekit.lowlevel.Watcher`'s
:class:`NotServed`).

Expected flow of :func:`until_served`:

1. For a resource of a group that can have CRDs (every group but the core
   one), read the CRD ``<plural>.<group>``: if the account may read it,
   watch that one CRD (a list+watch of its name) until it is
   ``Established`` and serves the resource's version;
2. then list the resource (``limit=1``) until it stops answering 404: the
   CRD's ``Established`` condition turns True a moment before the new
   version's list handler answers (pauses of 0.05 s doubling to 1 s);
3. without a CRD to watch (the core group, an aggregated API, or an
   account that may not read CRDs: 403), list the resource with the
   watcher's backoff (0.8 s doubling to 30 s) until it answers.

Guarantees: returns only once a list of the resource answered something
other than 404 (which the informer's list then meets, or handles as any
failure); never raises but for cancellation; logs nothing above DEBUG,
except the CRD watcher's own WARNING (one line a minute per failure kind)
when the CRD cannot be watched for a reason other than 403, and one
WARNING when the CRD exists but cannot be established (``NamesAccepted``
False: its names clash with another CRD's), naming the reason. What is
awaited is in :func:`awaited` (for the informer's one INFO line and its
statistics).

Time: every pause is on the injected clock.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import anyio

from .._client.client import Client
from .._foundations.clock import Clock
from .._foundations.errors import APIConnectionError, APIError, NotFound
from .._foundations.objects import Resource
from ..kinds.apiextensions_v1 import CUSTOM_RESOURCE_DEFINITIONS
from .backoff import Backoff
from .watcher import Watcher, WatchOptions

__all__ = ["awaited", "crd_name", "established", "names_clash", "until_served"]

logger = logging.getLogger("reconcilekit.informer")
_FIRST_PAUSE: Final = 0.05  # seconds between lists once the CRD is established, doubling
_LONGEST_PAUSE: Final = 1.0


def crd_name(resource: Resource) -> str | None:
    """The name the CRD of ``resource`` would have; None for the core group (no CRD)."""
    return f"{resource.plural}.{resource.group}" if resource.group else None


def _conditions(crd: Mapping[str, Any]) -> dict[Any, Mapping[str, Any]]:
    return {c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or ()
            if isinstance(c, Mapping)}


def names_clash(crd: Mapping[str, Any]) -> str | None:
    """Why kube-apiserver will not establish ``crd`` (``NamesAccepted`` False: its names
    clash with another CRD's), as ``reason: message``; None if nothing says so."""
    names = _conditions(crd).get("NamesAccepted")
    if names is None or names.get("status") != "False":
        return None
    return f"{names.get('reason')}: {names.get('message')}"


def established(crd: Mapping[str, Any]) -> bool:
    """Whether ``crd``'s ``Established`` condition is True."""
    condition = _conditions(crd).get("Established")
    return condition is not None and condition.get("status") == "True"


def awaited(resource: Resource) -> str:
    """What a watcher of ``resource`` waits for when its list answers 404, in words."""
    name = crd_name(resource)
    if name is None:
        return "the API server to serve it"
    return f"CustomResourceDefinition {name} to be established and serve {resource.version}"


async def until_served(client: Client, resource: Resource, clock: Clock) -> None:
    """Return once a list of ``resource`` no longer answers 404 (see the module docstring)."""
    name = crd_name(resource)
    if name is not None and await _readable(client, name):
        await _established(client, resource, name, clock)
        pause = _FIRST_PAUSE
        while not await _lists(client, resource):
            await clock.sleep(pause)
            pause = min(2 * pause, _LONGEST_PAUSE)
        return
    backoff = Backoff(clock=clock)
    while not await _lists(client, resource):
        await clock.sleep(backoff.next_delay())


async def _readable(client: Client, name: str) -> bool:
    """Whether this account may read CRD ``name`` (present or not)."""
    try:
        await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
    except NotFound:
        return True
    except (APIError, APIConnectionError):  # 403 and the rest: poll the resource instead
        return False
    return True


async def _lists(client: Client, resource: Resource) -> bool:
    """Whether a list of ``resource`` answers anything but 404 (a failure is the
    informer's to meet and report)."""
    try:
        await client.list(resource, limit=1)
    except NotFound:
        return False
    except (APIError, APIConnectionError):
        return True
    return True


async def _established(client: Client, resource: Resource, name: str, clock: Clock) -> None:
    """Watch CRD ``name`` until it is Established and serves ``resource.version``."""
    sink = _Established(resource, name)
    watcher = Watcher(client, CUSTOM_RESOURCE_DEFINITIONS, clock=clock,
                      options=WatchOptions(field_selector=f"metadata.name={name}"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(watcher.run, sink)
        await sink.done.wait()
        tg.cancel_scope.cancel()


class _Established:
    """A watch sink for one CRD that sets ``done`` once it serves the resource's version."""

    __slots__ = ("_clash", "_name", "_resource", "done")

    def __init__(self, resource: Resource, name: str) -> None:
        self._resource, self._name = resource, name
        self._clash: str | None = None
        self.done = anyio.Event()

    def replace(self, objects: list[dict[str, Any]], resource_version: str) -> None:
        for crd in objects:
            self._look(crd)

    def apply(self, event_type: str, obj: dict[str, Any]) -> None:
        if event_type != "DELETED":
            self._look(obj)

    def _look(self, crd: dict[str, Any]) -> None:
        clash = names_clash(crd)
        if clash is not None:
            if clash != self._clash:
                self._clash = clash
                logger.warning("%s: CustomResourceDefinition %s cannot be established: %s",
                               self._resource, self._name, clash,
                               extra={"resource": str(self._resource)})
            return
        served = any(v.get("name") == self._resource.version and v.get("served")
                     for v in (crd.get("spec") or {}).get("versions") or ()
                     if isinstance(v, dict))
        if established(crd) and served:
            self.done.set()
