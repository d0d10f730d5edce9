"""kube-apiserver's LimitRanger admission plugin, for the Pods a create makes.

For each LimitRange of the Pod's namespace with a ``Container`` item, every
container (and init container) lacking a limit gets the item's ``default``
and lacking a request its ``defaultRequest``; what was set is written in the
Pod's ``kubernetes.io/limit-ranger`` annotation, as kube-apiserver words it.
Then each container is checked against the item's ``min`` (its request, or
its limit) and ``max`` (its limit): a violation refuses the Pod, 403
Forbidden, naming every one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..machinery.quantity import parse_quantity
from ..machinery.status import StatusError

__all__ = ["ANNOTATION", "apply_limit_ranges"]

Obj = dict[str, Any]
ANNOTATION = "kubernetes.io/limit-ranger"


def _containers(spec: Obj) -> Iterable[tuple[str, Obj]]:
    for c in spec.get("containers") or ():
        yield "container", c
    for c in spec.get("initContainers") or ():
        yield "init container", c


def apply_limit_ranges(pod: Obj, name: str, ranges: Iterable[Obj]) -> None:
    """Default and check ``pod`` (named ``name``) by ``ranges``, in place (raises the
    plugin's 403)."""
    spec = pod.get("spec") or {}
    items = [item for r in ranges for item in (r.get("spec") or {}).get("limits") or ()
             if isinstance(item, dict) and item.get("type") == "Container"]
    if not items:
        return
    notes: list[str] = []
    for kind, container in _containers(spec):
        resources = container.setdefault("resources", {})
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        set_requests, set_limits = [], []
        for item in items:
            for key, value in (item.get("defaultRequest") or {}).items():
                if key not in requests:
                    requests[key] = value
                    set_requests.append(key)
            for key, value in (item.get("default") or {}).items():
                if key not in limits:
                    limits[key] = value
                    set_limits.append(key)
        if requests:
            resources["requests"] = requests
        if limits:
            resources["limits"] = limits
        cname = container.get("name", "")
        if set_requests:
            notes.append(f"{', '.join(sorted(set_requests))} request for {kind} {cname}")
        if set_limits:
            notes.append(f"{', '.join(sorted(set_limits))} limit for {kind} {cname}")
    if notes:
        meta = pod.setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}),
                               ANNOTATION: "LimitRanger plugin set: " + "; ".join(notes)}
    problems = []
    for _, container in _containers(spec):
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        for item in items:
            for key, bound in (item.get("min") or {}).items():
                asked = requests.get(key, limits.get(key))
                low = parse_quantity(bound)
                if asked is None:
                    problems.append(f"minimum {key} usage per Container is {bound}.  "
                                    "No request is specified")
                elif low is not None and (parse_quantity(asked) or 0) < low:
                    problems.append(f"minimum {key} usage per Container is {bound}, but "
                                    f"request is {asked}")
            for key, bound in (item.get("max") or {}).items():
                limit = limits.get(key)
                high = parse_quantity(bound)
                if limit is None:
                    problems.append(f"maximum {key} usage per Container is {bound}.  "
                                    "No limit is specified")
                elif high is not None and (parse_quantity(limit) or 0) > high:
                    problems.append(f"maximum {key} usage per Container is {bound}, but "
                                    f"limit is {limit}")
    if problems:
        shown = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise StatusError.forbidden_because("pods", name, "", shown)
