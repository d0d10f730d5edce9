"""The arithmetic of a Deployment's rollout, as kube-controller-manager's
``deployment/util`` computes it: surge and unavailability from
``maxSurge``/``maxUnavailable`` (percentages rounded up and down), a
template's ``pod-template-hash``, revisions and the annotations a
ReplicaSet carries, and the Deployment's conditions.

Every function is pure: it reads objects as stored and returns numbers or
changed copies; :mod:`.deployment` does the writing.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from typing import Any

import orjson

from ..machinery.unstructured import epoch_seconds, timestamp

__all__ = [
    "DESIRED_REPLICAS", "HASH_LABEL", "MAX_REPLICAS", "REVISION", "REVISION_HISTORY",
    "complete", "equal_ignoring_hash", "max_surge", "max_unavailable", "new_rs_replicas",
    "progressing", "replicas", "revision", "set_condition", "set_new_rs_annotations",
    "template_hash", "timed_out",
]

Obj = dict[str, Any]

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
_NOT_COPIED = frozenset({"kubectl.kubernetes.io/last-applied-configuration", REVISION,
                         REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS,
                         "deprecated.deployment.rollback.to"})
_REVISION_HISTORY_CHARS = 2000
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def replicas(obj: Obj | None) -> int:
    """``spec.replicas`` (a Deployment's and a ReplicaSet's default is 1; 0 for none)."""
    if obj is None:
        return 0
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _scaled(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, int):
        return value
    text = str(value or "0")
    if text.endswith("%"):
        exact = int(text[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(text)


def _fenceposts(d: Obj) -> tuple[int, int]:
    rolling = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    desired = replicas(d)
    surge = _scaled(rolling.get("maxSurge", "25%"), desired, True)
    unavailable = _scaled(rolling.get("maxUnavailable", "25%"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _rolling(d: Obj) -> bool:
    kind = ((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate")
    return bool(kind == "RollingUpdate")


def max_surge(d: Obj) -> int:
    return _fenceposts(d)[0] if _rolling(d) else 0


def max_unavailable(d: Obj) -> int:
    if not _rolling(d) or replicas(d) == 0:
        return 0
    return min(_fenceposts(d)[1], replicas(d))


def template_hash(template: Obj, collision_count: int | None) -> str:
    """The ``pod-template-hash`` of a template: FNV-1a of its canonical JSON and the
    collision count, its decimal digits spelled in the safe alphabet."""
    h = 0x811C9DC5
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        data += str(collision_count).encode()
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(ch) % len(_SAFE)] for ch in str(h))


def _without_hash(template: Obj) -> Obj:
    t = copy.deepcopy(template)
    labels = (t.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return t


def equal_ignoring_hash(a: Obj, b: Obj) -> bool:
    """Two Pod templates equal but for their ``pod-template-hash`` label."""
    return _without_hash(a) == _without_hash(b)


def revision(obj: Obj) -> int:
    value = (obj["metadata"].get("annotations") or {}).get(REVISION, "")
    return int(value) if value.isdigit() else 0


def new_rs_replicas(d: Obj, all_rss: Iterable[Obj], new_rs: Obj) -> int:
    """What the new ReplicaSet may be scaled to now (``NewRSNewReplicas``)."""
    if not _rolling(d):
        return replicas(d)
    current = sum(replicas(rs) for rs in all_rss)
    most = replicas(d) + max_surge(d)
    if current >= most:
        return replicas(new_rs)
    return replicas(new_rs) + min(most - current, replicas(d) - replicas(new_rs))


def _annotations(obj: Obj) -> dict[str, str]:
    meta = obj["metadata"]
    if not isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {}
    annotations: dict[str, str] = meta["annotations"]
    return annotations


def set_replicas_annotations(rs: Obj, desired: int, most: int) -> bool:
    """Write the desired and max replicas annotations; whether they changed."""
    annotations = _annotations(rs)
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(most))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def set_new_rs_annotations(d: Obj, rs: Obj, new_revision: int, exists: bool) -> bool:
    """Copy the Deployment's annotations, raise the revision (keeping the old ones in
    ``revision-history`` on a rollback) and, for a new one, the replica annotations."""
    annotations = _annotations(rs)
    changed = False
    for key, value in (d["metadata"].get("annotations") or {}).items():
        if key not in _NOT_COPIED and annotations.get(key) != value:
            annotations[key] = value
            changed = True
    old_text = annotations.get(REVISION)
    old = int(old_text) if old_text and old_text.isdigit() else 0
    if old_text and not old_text.isdigit():
        return changed
    if old < new_revision:
        annotations[REVISION] = str(new_revision)
        changed = True
        if old_text:
            history = annotations.get(REVISION_HISTORY, "")
            kept = history.split(",") if history else []
            total = len(history) + len(old_text) + 1
            while kept and total > _REVISION_HISTORY_CHARS:
                total -= len(kept.pop(0)) + 1
            if total <= _REVISION_HISTORY_CHARS:
                annotations[REVISION_HISTORY] = ",".join([*kept, old_text])
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


# -- conditions ---------------------------------------------------------------------------

def condition(status: Obj, kind: str) -> Obj | None:
    for c in status.get("conditions") or ():
        if c.get("type") == kind:
            return c  # type: ignore[no-any-return]
    return None


def new_condition(kind: str, status: str, reason: str, message: str, now: float) -> Obj:
    when = timestamp(now)
    return {"type": kind, "status": status, "lastUpdateTime": when, "lastTransitionTime": when,
            "reason": reason, "message": message}


def set_condition(status: Obj, cond: Obj) -> None:
    """``SetDeploymentCondition``: an unchanged status and reason is left as it is; a
    changed one moves to the end, keeping its transition time if its status stayed."""
    current = condition(status, cond["type"])
    if current is not None and current["status"] == cond["status"] and (
            current.get("reason") == cond["reason"]):
        return
    if current is not None and current["status"] == cond["status"]:
        cond["lastTransitionTime"] = current["lastTransitionTime"]
    remove_condition(status, cond["type"])
    status.setdefault("conditions", []).append(cond)


def remove_condition(status: Obj, kind: str) -> None:
    kept = [c for c in status.get("conditions") or () if c.get("type") != kind]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def has_progress_deadline(d: Obj) -> bool:
    deadline = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return bool(deadline is not None and deadline != 2**31 - 1)


def complete(d: Obj, status: Obj) -> bool:
    """Every replica updated and available, at the current generation."""
    want = replicas(d)
    return bool(status.get("updatedReplicas", 0) == want and status.get("replicas", 0) == want
            and status.get("availableReplicas", 0) == want
            and status.get("observedGeneration", 0) >= d["metadata"].get("generation", 0))


def progressing(d: Obj, status: Obj) -> bool:
    old = d.get("status") or {}
    old_old = old.get("replicas", 0) - old.get("updatedReplicas", 0)
    new_old = status.get("replicas", 0) - status.get("updatedReplicas", 0)
    return bool(status.get("updatedReplicas", 0) > old.get("updatedReplicas", 0)
            or new_old < old_old
            or status.get("readyReplicas", 0) > old.get("readyReplicas", 0)
            or status.get("availableReplicas", 0) > old.get("availableReplicas", 0))


def timed_out(d: Obj, status: Obj, now: float) -> bool:
    if not has_progress_deadline(d):
        return False
    cond = condition(status, "Progressing")
    if cond is None or cond.get("reason") == "NewReplicaSetAvailable":
        return False
    if cond.get("reason") == "ProgressDeadlineExceeded":
        return True
    deadline = int((d.get("spec") or {})["progressDeadlineSeconds"])
    return epoch_seconds(cond["lastUpdateTime"]) + deadline < now
