"""The parts reconcilekit is built from, for a user who assembles them without a Manager.

The :class:`Watcher` (list+watch with resume, 410 relist, :class:`Backoff`,
dead-connection detection; its settings in :class:`WatchOptions`) feeds a
:class:`WatchSink` (each list page by page through a :class:`ListSink` when
the sink asks for one); the :class:`Informer` puts it into a :class:`Store`
with named indexes and calls its handlers (a :class:`MutationDetector`
checks that no reader changed what the store shares); the :class:`LeaderElector` holds
one Lease. :func:`error_from_response` and
:func:`error_from_status` map an API server's answer to reconcilekit's
errors; the constants are wire-level resources and media types;
:func:`event_loop_options` is the anyio backend option a manager runs with
(uvloop when installed). As ``anyio.lowlevel``, these are stable but not
what an operator needs day to day.
"""

from ._cache.backoff import Backoff as Backoff
from ._cache.informer import Informer as Informer
from ._cache.mutation_detector import MutationDetector as MutationDetector
from ._cache.store import Store as Store
from ._cache.watch_sink import ListSink as ListSink
from ._cache.watch_sink import SinkRefused as SinkRefused
from ._cache.watch_sink import WatchSink as WatchSink
from ._cache.watcher import DeadWatchError as DeadWatchError
from ._cache.watcher import NotServed as NotServed
from ._cache.watcher import Watcher as Watcher
from ._cache.watcher import WatchOptions as WatchOptions
from ._client.client import PARTIAL_OBJECT_METADATA as PARTIAL_OBJECT_METADATA
from ._client.client import PARTIAL_OBJECT_METADATA_LIST as PARTIAL_OBJECT_METADATA_LIST
from ._coordination.leader_election import LeaderElector as LeaderElector
from ._foundations.errors import error_from_response as error_from_response
from ._foundations.errors import error_from_status as error_from_status
from ._foundations.event_loop import event_loop_options as event_loop_options

__all__ = [
    "Backoff",
    "DeadWatchError",
    "Informer",
    "LeaderElector",
    "ListSink",
    "MutationDetector",
    "NotServed",
    "PARTIAL_OBJECT_METADATA",
    "PARTIAL_OBJECT_METADATA_LIST",
    "SinkRefused",
    "Store",
    "WatchOptions",
    "WatchSink",
    "Watcher",
    "error_from_response",
    "error_from_status",
    "event_loop_options",
]
