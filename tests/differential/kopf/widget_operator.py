"""A small kopf operator for the differential corpus: it marks each Widget ready and
keeps a finalizer on it until its deletion handler has run."""

from __future__ import annotations

from typing import Any

import kopf

GROUP, VERSION, PLURAL = "differential.reconcilekit.dev", "v1", "widgets"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = False  # no Events: their timing is the operator's own
    settings.watching.server_timeout = 60


@kopf.on.create(GROUP, VERSION, PLURAL)
def created(spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
    patch.status["replicas"] = int(spec.get("replicas", 1))


@kopf.on.delete(GROUP, VERSION, PLURAL)
def deleted(**_: Any) -> None:
    """Nothing to clean up: the finalizer kopf keeps until this ran is what is tested."""
