"""``AuditLog``: kube-apiserver's JSON-lines audit log read back as ``AuditEvent`` objects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconcilekit.testing import AuditLog, ControlPlane

EVENT = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
         "auditID": "a1", "stage": "ResponseComplete", "verb": "patch",
         "user": {"username": "operator-0"}, "userAgent": "reconcilekit/1",
         "objectRef": {"resource": "cnclaims", "namespace": "ns", "name": "c",
                       "subresource": "status"},
         "responseStatus": {"code": 200},
         "requestReceivedTimestamp": "2026-01-02T03:04:05.123456Z",
         "stageTimestamp": "2026-01-02T03:04:05.223456Z"}


def test_events_are_read_in_order_and_a_line_being_written_waits(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    log = AuditLog(path)
    assert log.read() == [] and log.new() == []  # no log yet: nothing audited
    second = dict(EVENT, auditID="a2", verb="create", responseStatus={"code": 409})
    started = dict(EVENT, auditID="a0", stage="ResponseStarted")
    line = json.dumps(second)
    path.write_text(json.dumps(started) + "\n" + json.dumps(EVENT) + "\n" + line[:20])
    (first,) = log.new()
    assert (first.audit_id, first.user, first.verb, first.key, first.code) == (
        "a1", "operator-0", "patch", "cnclaims/status ns/c", 200)
    assert first.succeeded and first.write
    assert first.completed - first.received == pytest.approx(0.1)
    with path.open("a") as out:
        out.write(line[20:] + "\n")
    (late,) = log.new()
    assert late.audit_id == "a2" and not late.succeeded
    assert [e.audit_id for e in log.read()] == ["a1", "a2"]


def test_users_and_audit_are_checked(tmp_path: Path) -> None:
    (tmp_path / "etcd").touch(mode=0o755)
    (tmp_path / "kube-apiserver").touch(mode=0o755)
    with pytest.raises(ValueError, match="user name 'admin'"):
        ControlPlane(tmp_path, users=("admin",), controller_manager=False)
    with pytest.raises(ValueError, match="user name 'a b'"):
        ControlPlane(tmp_path, users=("a b",), controller_manager=False)
    plane = ControlPlane(tmp_path, users=("a",), controller_manager=False)
    with pytest.raises(ValueError, match="no user 'b' in this control plane; it has admin, a"):
        plane.token_for("b")
    with pytest.raises(RuntimeError, match="start it with audit=True"):
        plane.audit_log()
