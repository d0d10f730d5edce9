"""The event loop a manager runs on: uvloop when it is installed, asyncio's own otherwise.

uvloop (``pip install 'reconcilekit[fast]'``) is a drop-in asyncio event loop
written on libuv. It speeds up what a controller does most, tasks handing
work to each other: ``benchmarks/workqueue.py`` measures 20-40% more
add/get/done cycles per second when a reconcile awaits (docs/performance.md).
:meth:`Manager.run_until_signal` and ``python -m examples.cnclaim`` use it
through anyio's asyncio backend option when it can be imported;
``RECONCILEKIT_EVENT_LOOP=asyncio`` keeps asyncio's own loop.

Guarantees: without uvloop installed, or with the variable set, nothing
changes; code awaiting through anyio or asyncio behaves the same on both.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

__all__ = ["EVENT_LOOP_ENV", "event_loop_options"]

EVENT_LOOP_ENV = "RECONCILEKIT_EVENT_LOOP"


def event_loop_options() -> dict[str, Any]:
    """anyio's asyncio backend options: ``use_uvloop`` when uvloop is installed and wanted."""
    wanted = os.environ.get(EVENT_LOOP_ENV, "").strip().lower()
    if wanted == "asyncio" or importlib.util.find_spec("uvloop") is None:
        return {}
    return {"use_uvloop": True}
