"""What the informer tests share: ConfigMaps to write, a handler that records what it was
told, an informer run until its watch is open, and its store's names and data."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio

from reconcilekit import EventHandler, ObjectKey
from reconcilekit.lowlevel import Informer
from reconcilekit.testing import eventually

SYSTEM_OBJECTS = frozenset({"kube-root-ca.crt"})


def cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    """A ConfigMap; empty maps are left out, as kube-apiserver leaves them out of answers."""
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    if labels:
        obj["metadata"]["labels"] = labels
    if data:
        obj["data"] = data
    return obj


class Recorder:
    """An event handler that records what it was told, as (kind, name, detail)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    def handler(self) -> EventHandler:
        return EventHandler(
            on_add=lambda o: self._record("add", o, o.get("data")),
            on_update=lambda old, new: self._record("update", new,
                                                    (old.get("data"), new.get("data"))),
            on_delete=lambda o: self._record("delete", o, o.get("data")))

    def _record(self, kind: str, obj: dict[str, Any], detail: Any) -> None:
        if obj["metadata"]["name"] not in SYSTEM_OBJECTS:
            self.events.append((kind, obj["metadata"]["name"], detail))


@asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Informer]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(informer.run)
        # synced, and the server holds the watch (a fault injected before that would
        # miss it: the watch is registered before the server answers its request)
        await eventually(lambda: informer.has_synced and informer.statistics().watching)
        yield informer
        tg.cancel_scope.cancel()


def names(informer: Informer) -> list[str]:
    return [name for o in informer.store.list()
            if (name := o["metadata"]["name"]) not in SYSTEM_OBJECTS]


def data_of(informer: Informer, ns: str, name: str) -> Mapping[str, str] | None:
    obj = informer.store.get(ObjectKey(ns, name))
    return None if obj is None else obj.get("data")
