"""kube-apiserver's audit log, read back: who wrote what, when, as the server saw it.

A test that must referee its operator from the server's side (not on the
operator's word) reads the audit log of a :class:`ControlPlane` started with
``audit=True``: one :class:`AuditEvent` per write request kube-apiserver
answered (create, update, patch, delete, deletecollection), at level
Metadata, at stage ResponseComplete, and every request of the extra users
(reads, lists and watches too; a watch is logged when it ends). Each event names the authenticated
user (give each process its own with ``ControlPlane(users=...)``), the
object, the answer's status code and two server timestamps.

Expected flow::

    async with ControlPlane(audit=True, users=("a", "b")) as plane:
        log = plane.audit_log()
        ...                                  # processes write as "a" and "b"
        for event in log.read():             # every event so far, in order
            if event.user == "a" and event.succeeded: ...
        fresh = log.new()                    # only those written since the last new()

Guarantees:
  * :meth:`AuditLog.read` and :meth:`AuditLog.new` return events in the
    order kube-apiserver wrote them (the log backend writes each event as
    one JSON line, in blocking mode: before the response is sent);
  * a line still being written (no newline yet) is left for the next call,
    never parsed half;
  * timestamps are seconds since the epoch (floats, microseconds kept), on
    the machine's clock, so they compare with ``time.time()`` of a process
    on the same machine.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = ["WRITE_VERBS", "AuditEvent", "AuditLog", "audit_policy"]

WRITE_VERBS: Final = ("create", "update", "patch", "delete", "deletecollection")

def audit_policy(users: tuple[str, ...] = ()) -> dict[str, Any]:
    """The policy ``ControlPlane(audit=True)`` starts kube-apiserver with: every write, and
    every request of ``users`` (reads and watches too: the processes under test), at
    level Metadata, logged once each, when answered."""
    rules: list[dict[str, Any]] = [{"level": "Metadata", "verbs": list(WRITE_VERBS)}]
    if users:
        rules.append({"level": "Metadata", "users": list(users)})
    return {"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
            "omitStages": ["RequestReceived", "ResponseStarted"],
            "rules": [*rules, {"level": "None"}]}


def _seconds(stamp: str | None) -> float:
    if not stamp:
        return 0.0
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One write request as kube-apiserver answered it.

    ``received``: when the server received the request
    (``requestReceivedTimestamp``); ``completed``: when it finished
    answering (``stageTimestamp`` of ResponseComplete). ``code``: the HTTP
    status of the answer (0 when it has none, e.g. a request cut short).
    ``resource`` is the plural (``pods``), ``subresource`` e.g. ``status``.
    """

    audit_id: str
    user: str
    user_agent: str
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    received: float
    completed: float

    @property
    def succeeded(self) -> bool:
        """Whether the write took effect (a 2xx answer)."""
        return 200 <= self.code < 300

    @property
    def write(self) -> bool:
        """Whether the request was a write (:data:`WRITE_VERBS`)."""
        return self.verb in WRITE_VERBS

    @property
    def key(self) -> str:
        """``resource[/subresource] namespace/name``: the object the write was for."""
        sub = f"/{self.subresource}" if self.subresource else ""
        return f"{self.resource}{sub} {self.namespace}/{self.name}"

    @classmethod
    def of(cls, raw: dict[str, Any]) -> AuditEvent:
        """Parse one event of the audit.k8s.io/v1 JSON format."""
        ref = raw.get("objectRef") or {}
        return cls(
            audit_id=str(raw.get("auditID") or ""),
            user=str((raw.get("user") or {}).get("username") or ""),
            user_agent=str(raw.get("userAgent") or ""), verb=str(raw.get("verb") or ""),
            resource=str(ref.get("resource") or ""),
            subresource=str(ref.get("subresource") or ""),
            namespace=str(ref.get("namespace") or ""), name=str(ref.get("name") or ""),
            code=int((raw.get("responseStatus") or {}).get("code") or 0),
            received=_seconds(raw.get("requestReceivedTimestamp")),
            completed=_seconds(raw.get("stageTimestamp")))


class AuditLog:
    """Reads the JSON-lines audit log at ``path`` (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    def read(self) -> list[AuditEvent]:
        """Every complete event in the log so far."""
        return self._parse(0)[0]

    def new(self) -> list[AuditEvent]:
        """The complete events written since the last call of :meth:`new`."""
        events, self._offset = self._parse(self._offset)
        return events

    def _parse(self, offset: int) -> tuple[list[AuditEvent], int]:
        try:
            with self.path.open("rb") as log:
                log.seek(offset)
                data = log.read()
        except FileNotFoundError:  # nothing audited yet
            return [], offset
        end = data.rfind(b"\n") + 1  # a line being written waits for the next call
        events = []
        for line in data[:end].splitlines():
            if line.strip():
                raw = json.loads(line)
                if raw.get("stage") == "ResponseComplete":
                    events.append(AuditEvent.of(raw))
        return events, offset + end
