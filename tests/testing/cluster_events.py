"""The Events a cluster's controllers write, read by tests: a controller records an event
apart from (and often after) the write it reports, so a test names the messages it needs
and waits for them."""

from __future__ import annotations

from collections.abc import Collection

from reconcilekit import Client
from reconcilekit.testing import eventually


async def events_of(client: Client, ns: str, name: str, *, having: Collection[str] = (),
                    within: float = 60.0) -> list[str]:
    """The messages of the Events about ``name`` in ``ns``, oldest first, once every
    message in ``having`` is among them (within ``within`` seconds)."""
    async def found() -> tuple[list[str]] | None:
        listed = await client.request("GET", f"/api/v1/namespaces/{ns}/events")
        messages = [e["message"] for e in sorted(listed["items"],
                                                 key=lambda e: e["metadata"]["name"])
                    if e["involvedObject"]["name"] == name]
        return (messages,) if all(m in messages for m in having) else None
    [messages] = await eventually(found, within=within, interval=0.05,
                                  what=f"the events of {name} saying {sorted(having)}")
    return messages
