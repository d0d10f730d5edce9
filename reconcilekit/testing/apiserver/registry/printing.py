"""What kube-apiserver's printers share: ``<none>`` for an empty cell, label and
selector formatting, a workload's containers and images, lists shortened to three
entries and ``+ N more...``, and a load balancer's addresses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...._foundations.selectors import LabelSelector, SelectorError

__all__ = ["container_cells", "format_label_selector", "format_labels",
           "list_with_more", "load_balancer_addresses", "or_none"]


def or_none(value: Any) -> Any:
    """``<none>`` for an empty value."""
    return value if value else "<none>"


def format_labels(labels: Mapping[str, str] | None) -> str:
    """``labels.FormatLabels``: ``k=v`` pairs sorted by key, or ``<none>``."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels)) if labels else "<none>"


def format_label_selector(selector: Mapping[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector``: the selector as a string, ``<none>`` when it is
    empty or absent, ``<error>`` when it does not convert."""
    try:
        shown = str(LabelSelector.from_dict(selector))
    except SelectorError:
        return "<error>"
    return shown or "<none>"


def container_cells(pod_spec: Mapping[str, Any]) -> tuple[str, str]:
    """``layoutContainerCells``: the containers' names and images, comma-joined."""
    containers = pod_spec.get("containers") or ()
    return (",".join(str(c.get("name", "")) for c in containers),
            ",".join(str(c.get("image", "")) for c in containers))


def list_with_more(items: Sequence[str], most: int = 3) -> str:
    """``listWithMoreString``: the first ``most`` items, ``+ N more...``, or ``<unset>``."""
    shown = ",".join(items[:most])
    if len(items) > most:
        return f"{shown} + {len(items) - most} more..."
    return shown or "<unset>"


def load_balancer_addresses(status: Mapping[str, Any]) -> str:
    """``loadBalancerStatusStringer``: each ingress point's IP (or hostname), sorted,
    without repeats, never clipped (the server prints wide)."""
    found = {str(i.get("ip") or i.get("hostname")) for i in status.get("ingress") or ()
             if i.get("ip") or i.get("hostname")}
    return ",".join(sorted(found))
