"""The work queue a controller's workers drain, and the rate limiters that pace retries.

:class:`WorkQueue` de-duplicates keys, never hands one key to two workers,
re-queues a key added while it was processed, serves higher priorities first
(:data:`LOW_PRIORITY`: keys of initial lists and resyncs) and keys of one
priority fairly across namespaces (or what a controller says); the rate limiters are
client-go's (per-item exponential, fast-slow, token bucket, max-of), and
:func:`default_controller_rate_limiter` is controller-runtime's default.
"""

from ._workqueue.queue import LOW_PRIORITY as LOW_PRIORITY
from ._workqueue.queue import QueueShutDown as QueueShutDown
from ._workqueue.queue import WorkQueue as WorkQueue
from ._workqueue.rate_limiters import BucketRateLimiter as BucketRateLimiter
from ._workqueue.rate_limiters import (
    ItemExponentialFailureRateLimiter as ItemExponentialFailureRateLimiter,
)
from ._workqueue.rate_limiters import ItemFastSlowRateLimiter as ItemFastSlowRateLimiter
from ._workqueue.rate_limiters import MaxOfRateLimiter as MaxOfRateLimiter
from ._workqueue.rate_limiters import RateLimiter as RateLimiter
from ._workqueue.rate_limiters import (
    default_controller_rate_limiter as default_controller_rate_limiter,
)

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "LOW_PRIORITY",
    "MaxOfRateLimiter",
    "QueueShutDown",
    "RateLimiter",
    "WorkQueue",
    "default_controller_rate_limiter",
]
