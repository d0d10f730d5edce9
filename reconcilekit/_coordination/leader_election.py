"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's ``leaderelection`` does it.

Candidates that share a Lease (``namespace/name``) agree on one leader by
writing their identity into it with optimistic concurrency. The holder
renews it every ``retry_period``; the others take it over only once it has
gone unrenewed for the lease's ``leaseDurationSeconds``, as timed by their
own clocks.

Expected flow (what a manager does; any caller can)::

    elector = LeaderElector(client, name="my-controller", namespace="ns",
                            identity=f"{hostname}_{uuid4()}")
    await elector.acquire()                # 1. block until we hold the lease
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(elector.hold)    # 2. renew; LeadershipLost ends the group
            tg.start_soon(run_controllers)   # 3. the work the lease guards
    finally:
        with anyio.CancelScope(shield=True):
            await elector.release()        # 4. hand over at once on a clean stop

Each attempt (``acquire`` retries, ``hold`` renewals) follows client-go's
``tryAcquireOrRenew``:

1. while leading, update the Lease optimistically with the resourceVersion
   of our last write; on any failure fall back to 2;
2. read the Lease; create it when it does not exist (losing that race,
   AlreadyExists, means reading the winner's record instead);
3. when its record (holder, duration, times, transitions) differs from the
   one last seen, remember it and the local ``clock.monotonic()`` of now;
4. a record held by another identity is left alone until
   ``leaseDurationSeconds`` have passed since it was last seen to change;
   an empty holder (a released lease) may be taken at once;
5. write our record with the read resourceVersion: ``leaseTransitions`` is
   incremented when the holder changes, ``acquireTime`` is kept on renewals.
   A Conflict means someone else wrote first: the next attempt reads again.

Guarantees:
  * ``hold()`` raises :class:`LeadershipLost` at most ``renew_deadline``
    after the *start* of the last successful write (a slow request is
    cancelled, not awaited), or as soon as it reads a Lease naming anyone
    else (or nobody). A standby only takes over ``lease_duration`` after it
    saw that write, which it can only see after it was sent; so with
    ``lease_duration > renew_deadline`` the old leader has stepped down
    before a new one starts, given clocks that run at about the same rate;
  * remote timestamps (``renewTime``) are never compared with local time:
    they only tell that the record changed. Clock *skew* between candidates
    is harmless; only a difference in clock *rate* above
    ``lease_duration / renew_deadline`` breaks the margin above;
  * ``on_change(True)`` is called once when ``acquire()`` wins, and
    ``on_change(False)`` once when ``hold()`` loses or ``release()`` steps
    down; a callback that raises is logged and changes nothing.

Assumptions:
  * every candidate has a unique ``identity`` (a restarted process with the
    identity of the holder takes over at once, keeping ``acquireTime``);
  * ``acquire``, ``hold`` and ``release`` of one elector run one at a time;
  * ``leaseDurationSeconds`` is an integer: ``lease_duration`` is rounded *up*
    (client-go truncates), so a standby never waits less than the holder
    assumes.

Caveats:
  * this is not fencing: a leader stalled longer than ``lease_duration -
    renew_deadline`` (a stopped process, a blocked event loop) may still act
    after a standby took over. Guarded work must stop when ``hold()`` raises;
  * ``is_leader`` stays True after ``hold()`` is cancelled, until
    ``release()``: the lease is still ours until it expires;
  * ``hold()`` never re-acquires: after it raises, call ``acquire()`` again.

Errors: ``acquire()`` and ``hold()`` never raise API errors, they retry
(the last one is in :meth:`LeaderElector.statistics`); ``release()`` logs a
failed write and returns, leaving the lease to expire by itself.
"""

from __future__ import annotations

import datetime
import enum
import logging
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio

from .._client.client import Client
from .._foundations.clock import Clock, SystemClock
from .._foundations.errors import (
    AlreadyExists,
    APIConnectionError,
    APIError,
    Conflict,
    NotFound,
    describe_error,
)
from ..kinds import LEASES

__all__ = [
    "LeaderElection",
    "LeaderElectionStatistics",
    "LeaderElector",
    "LeadershipLost",
    "check_lease_timing",
]

logger = logging.getLogger("reconcilekit.leaderelection")

_SYSTEM_CLOCK: Final = SystemClock()
_JITTER_FACTOR: Final = 1.2  # client-go's JitterFactor: waits of retry_period * [1, 2.2)
_RELEASED_DURATION: Final = 1  # leaseDurationSeconds of a released lease, as client-go


class LeadershipLost(Exception):
    """``hold()`` could not renew the lease for ``renew_deadline``, or another holder took it."""


@dataclass(frozen=True, slots=True)
class LeaderElectionStatistics:
    """The state of one elector, for metrics, health checks and debugging."""

    lease: str  # namespace/name
    identity: str
    is_leader: bool
    holder: str  # holderIdentity last read or written; "" for none or not read yet
    lease_transitions: int  # leaseTransitions last read or written
    acquisitions: int  # times this elector became leader
    renewals: int  # successful renewals while leading
    failed_attempts: int  # attempts that ended in an API error or Conflict
    last_renew_age: float | None  # seconds since the last successful write was sent
    last_error: str | None


@dataclass(frozen=True, slots=True)
class _Record:
    """The election fields of a LeaseSpec, as client-go's LeaderElectionRecord."""

    holder: str = ""
    duration: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0

    @classmethod
    def of(cls, lease: Mapping[str, Any]) -> _Record:
        spec = lease.get("spec") or {}
        return cls(spec.get("holderIdentity") or "", spec.get("leaseDurationSeconds") or 0,
                   spec.get("acquireTime"), spec.get("renewTime"),
                   spec.get("leaseTransitions") or 0)

    def spec(self) -> dict[str, Any]:
        return {"holderIdentity": self.holder, "leaseDurationSeconds": self.duration,
                "acquireTime": self.acquire_time, "renewTime": self.renew_time,
                "leaseTransitions": self.transitions}


class _Outcome(enum.Enum):
    HELD = "held"  # our record is written: acquired or renewed
    TAKEN = "taken"  # another identity holds it (while leading: anyone but us)
    FAILED = "failed"  # an API error or a Conflict; try again


def _micro_time(seconds: float) -> str:
    """A metav1.MicroTime: RFC 3339 in UTC with exactly six fractional digits."""
    when = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def check_lease_timing(lease_duration: float, renew_deadline: float,
                       retry_period: float) -> None:
    """Raise ValueError unless ``lease_duration > renew_deadline > 1.2 * retry_period > 0``.

    That ordering is what keeps two holders from acting at once: a holder
    gives up ``renew_deadline`` after its last good renewal, before anyone
    may take over (``lease_duration`` after the last renewal they saw).
    """
    for label, seconds in (("lease_duration", lease_duration),
                           ("renew_deadline", renew_deadline),
                           ("retry_period", retry_period)):
        if not 0 < seconds < math.inf:
            raise ValueError(f"{label} must be a finite number greater than zero, "
                             f"got {seconds!r}")
    if lease_duration <= renew_deadline:
        raise ValueError(f"lease_duration ({lease_duration}) must be greater than "
                         f"renew_deadline ({renew_deadline})")
    if renew_deadline <= retry_period * _JITTER_FACTOR:
        raise ValueError(f"renew_deadline ({renew_deadline}) must be greater than "
                         f"retry_period * {_JITTER_FACTOR} ({retry_period * _JITTER_FACTOR})")


@dataclass(frozen=True, kw_only=True, slots=True)
class LeaderElection:
    """Run a manager's controllers on one replica at a time: the holder of Lease ``name``.

    ``Manager(client, coordination=LeaderElection(name="my-operator"))``. The
    Lease lives in ``namespace`` (default: the manager's namespace, else
    ``"default"``). The timings are client-go's defaults and must satisfy
    ``lease_duration > renew_deadline > 1.2 * retry_period > 0``
    (ValueError otherwise): ``lease_duration`` is how long a standby waits,
    after the last renewal it saw, before taking over; ``renew_deadline``
    how long the leader keeps failing to renew before it steps down;
    ``retry_period`` the wait between attempts.

    ``standby`` says what a replica does while another leads: ``"warm"``
    (the default, as controller-runtime's) lists and watches everything the
    leader would, so when it takes the Lease its controllers start at once,
    whatever the cluster's size; ``"cold"`` starts its caches only once it
    holds the Lease (renewing it meanwhile), saving a standby's memory and
    its share of the API server's list and watch load, at the price of a
    failover that lists everything first. Either way a standby serves the
    manager's webhooks (a webhook needs no Lease) and ``/metrics``.
    """

    name: str
    namespace: str | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    standby: Literal["warm", "cold"] = "warm"

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("LeaderElection needs the Lease's name")
        if self.standby not in ("warm", "cold"):
            raise ValueError(f"LeaderElection standby is 'warm' or 'cold', not {self.standby!r}")
        check_lease_timing(self.lease_duration, self.renew_deadline, self.retry_period)


class LeaderElector:
    """One candidate for the Lease ``namespace/name``; see the module docstring.

    ``lease_duration`` is how long standbys wait after the last change they
    saw before taking over; ``renew_deadline`` how long the leader keeps
    failing to renew before it gives up; ``retry_period`` the wait between
    attempts (jittered up to 2.2x while acquiring). client-go's defaults and
    checks: ``lease_duration > renew_deadline > 1.2 * retry_period > 0``.

    Invariants (whenever no method is running):
      * ``_observed`` is the last record read or written, and
        ``_observed_at`` the ``clock.monotonic()`` when it was first seen;
      * ``_lease`` is the Lease object that record came from (for its
        resourceVersion), None before the first read;
      * ``_leading`` implies ``_observed.holder == identity``.
    """

    def __init__(self, client: Client, *, name: str, namespace: str, identity: str,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0,
                 retry_period: float = 2.0, clock: Clock = _SYSTEM_CLOCK,
                 on_change: Callable[[bool], None] | None = None,
                 log_level: int = logging.INFO) -> None:
        for label, value in (("name", name), ("namespace", namespace), ("identity", identity)):
            if not value:
                raise ValueError(f"LeaderElector needs a non-empty {label}")
        check_lease_timing(lease_duration, renew_deadline, retry_period)
        self._client = client
        self._name = name
        self._namespace = namespace
        self._identity = identity
        self._lease_duration = lease_duration
        self._renew_deadline = renew_deadline
        self._retry_period = retry_period
        self._clock = clock
        self._on_change = on_change
        self._log_level = log_level  # of the acquire and release lines (a lost lease warns)
        self._leading = False
        self._lease: Mapping[str, Any] | None = None
        self._observed = _Record()
        self._observed_at = clock.monotonic()
        self._renewed_at: float | None = None  # monotonic start of our last successful write
        self._acquisitions = 0
        self._renewals = 0
        self._failures = 0
        self._last_error: str | None = None

    @property
    def is_leader(self) -> bool:
        """True from a successful ``acquire()`` until ``hold()`` loses or ``release()``."""
        return self._leading

    @property
    def identity(self) -> str:
        return self._identity

    def __repr__(self) -> str:
        return (f"LeaderElector({self._namespace}/{self._name}, identity={self._identity!r}, "
                f"leader={self._leading})")

    def statistics(self) -> LeaderElectionStatistics:
        """A snapshot of this elector's state and counters."""
        age = None if self._renewed_at is None else self._clock.monotonic() - self._renewed_at
        return LeaderElectionStatistics(
            lease=f"{self._namespace}/{self._name}", identity=self._identity,
            is_leader=self._leading, holder=self._observed.holder,
            lease_transitions=self._observed.transitions, acquisitions=self._acquisitions,
            renewals=self._renewals, failed_attempts=self._failures, last_renew_age=age,
            last_error=self._last_error)

    # -- the protocol -----------------------------------------------------------------------

    async def acquire(self) -> None:
        """Return once this identity holds the lease, trying every ``retry_period`` (jittered).

        Returns at once when already leading. Cancellable at every wait.
        """
        if self._leading:
            return
        logger.log(self._log_level, "%s: trying to acquire lease %s/%s", self._identity,
                   self._namespace, self._name)
        while await self._attempt() is not _Outcome.HELD:
            await self._clock.sleep(self._retry_period * (1 + random.random() * _JITTER_FACTOR))
        self._set_leading(True)
        logger.log(self._log_level, "%s: acquired lease %s/%s", self._identity,
                   self._namespace, self._name)

    async def hold(self) -> None:
        """Renew the lease every ``retry_period``; runs until cancelled or the lease is lost.

        Raises :class:`LeadershipLost` (after setting ``is_leader`` False and
        calling ``on_change(False)``) when no renewal has succeeded for
        ``renew_deadline``, or at once when the Lease names anyone else.
        Raises RuntimeError when called while not leading.
        """
        if not self._leading:
            raise RuntimeError("hold() needs the lease: call acquire() first")
        reasons: list[str] = []

        def give_up(reason: str, scope: anyio.CancelScope) -> None:
            if not reasons:  # step down before anything else can run, even a cancellation
                reasons.append(reason)
                self._set_leading(False)
            scope.cancel()

        async def renew(scope: anyio.CancelScope) -> None:
            while True:
                await self._clock.sleep(self._retry_period)
                if await self._attempt() is _Outcome.TAKEN:
                    give_up(f"the lease is now held by {self._observed.holder!r}", scope)
                    return

        async def watchdog(scope: anyio.CancelScope) -> None:
            assert self._renewed_at is not None
            while (left := self._renewed_at + self._renew_deadline
                   - self._clock.monotonic()) > 0:
                await self._clock.sleep(left)
            last = (f"last error: {self._last_error}" if self._last_error
                    else "the last attempt is still unanswered")
            give_up(f"no renewal succeeded for {self._renew_deadline:g}s ({last})", scope)

        async with anyio.create_task_group() as tg:
            tg.start_soon(renew, tg.cancel_scope)
            tg.start_soon(watchdog, tg.cancel_scope)
        # Both tasks loop until cancelled: getting here means one of them gave up.
        message = f"{self._identity} lost lease {self._namespace}/{self._name}: {reasons[0]}"
        logger.warning("%s", message)
        raise LeadershipLost(message)

    async def release(self) -> None:
        """Step down; if the lease still names us, hand it over at once.

        Writes an empty ``holderIdentity`` and ``leaseDurationSeconds: 1``
        (client-go's ReleaseOnCancel) with the resourceVersion of our last
        read or write, so a Lease someone else has written since is left
        alone (Conflict); on a Conflict the Lease is read again, and if it
        still names us (a renewal cancelled in flight landed after all) it
        is released at its current version. Call it only once the guarded
        work has stopped.
        Failures are logged, not raised: the lease then expires by itself.
        """
        try:
            if self._lease is None or self._observed.holder != self._identity:
                return
            now = _micro_time(self._clock.time())
            record = _Record("", _RELEASED_DURATION, now, now, self._observed.transitions)
            try:
                try:
                    await self._write(record, self._lease)
                except Conflict:
                    # A renewal cancelled in flight may have landed after all: if the
                    # Lease still names us, release it at its current version.
                    lease = await self._client.get(LEASES, self._name, self._namespace)
                    if _Record.of(lease).holder != self._identity:
                        return
                    await self._write(record, lease)
            except (APIError, APIConnectionError) as exc:
                logger.warning("%s: could not release lease %s/%s: %s", self._identity,
                               self._namespace, self._name, exc)
                return
            logger.log(self._log_level, "%s: released lease %s/%s", self._identity,
                       self._namespace, self._name)
        finally:
            self._set_leading(False)

    # -- one attempt ------------------------------------------------------------------------

    async def _attempt(self) -> _Outcome:
        try:
            outcome = await self._try_acquire_or_renew()
        except (APIError, APIConnectionError) as exc:
            outcome = _Outcome.FAILED
            self._last_error = describe_error(exc)
        if outcome is _Outcome.FAILED:
            self._failures += 1
            logger.debug("%s: attempt on lease %s/%s failed: %s", self._identity,
                         self._namespace, self._name, self._last_error)
        return outcome

    async def _try_acquire_or_renew(self) -> _Outcome:
        now = _micro_time(self._clock.time())
        ours = _Record(self._identity, math.ceil(self._lease_duration), now, now, 0)
        if self._leading and self._lease is not None and self._valid():  # 1. fast path
            renewal = _Record(self._identity, ours.duration, self._observed.acquire_time, now,
                              self._observed.transitions)
            try:
                await self._write(renewal, self._lease)
            except (APIError, APIConnectionError) as exc:
                self._last_error = describe_error(exc)
            else:
                self._renewals += 1
                return _Outcome.HELD
        try:  # 2. read, or create
            lease = await self._client.get(LEASES, self._name, self._namespace)
        except NotFound:
            started = self._clock.monotonic()
            body = {"metadata": {"name": self._name, "namespace": self._namespace},
                    "spec": ours.spec()}
            try:
                created = await self._client.create(LEASES, body, self._namespace)
            except AlreadyExists:  # another candidate created it first: read its record
                lease = await self._client.get(LEASES, self._name, self._namespace)
            else:
                self._wrote(created, started)
                return _Outcome.HELD
        self._lease = lease
        record = _Record.of(lease)
        if record != self._observed:  # 3. a change: time it by our own clock
            self._observed = record
            self._observed_at = self._clock.monotonic()
        if record.holder == self._identity:  # a renewal keeps acquireTime and transitions
            ours = _Record(self._identity, ours.duration, record.acquire_time, now,
                           record.transitions)
        elif self._leading or (record.holder and self._valid()):  # 4.
            return _Outcome.TAKEN
        else:  # 5. a new holder
            ours = _Record(self._identity, ours.duration, now, now, record.transitions + 1)
        await self._write(ours, lease)  # a Conflict: someone wrote since our read
        if self._leading:
            self._renewals += 1
        return _Outcome.HELD

    def _valid(self) -> bool:
        """Whether the observed record has changed within its leaseDurationSeconds."""
        return self._clock.monotonic() < self._observed_at + self._observed.duration

    async def _write(self, record: _Record, lease: Mapping[str, Any]) -> None:
        started = self._clock.monotonic()
        body = dict(lease, spec={**(lease.get("spec") or {}), **record.spec()})
        self._wrote(await self._client.update(LEASES, body), started)

    def _wrote(self, lease: Mapping[str, Any], started: float) -> None:
        self._lease = lease
        self._observed = _Record.of(lease)
        self._observed_at = self._clock.monotonic()
        if self._observed.holder == self._identity:
            self._renewed_at = started

    def _set_leading(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        if leading:
            self._acquisitions += 1
        if self._on_change is not None:
            try:
                self._on_change(leading)
            except Exception:
                logger.exception("on_change(%s) of %r failed", leading, self)
