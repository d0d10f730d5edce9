"""The tracing switch: off by default; :func:`enable` and :func:`disable` turn it.

Every traced part reads :data:`active` at each event, reconcile, request and
review, and calls nothing more while it is None: with tracing off, nothing
of OpenTelemetry is imported and the cost is that one read. The switch is
the process's (an instrumentation's, as OpenTelemetry's own instrumentors
are): every manager, controller, client and webhook server in the process
is traced from the moment it is on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._foundations.logging import set_trace_ids
from .traced_parts import TracingHooks

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["active", "disable", "enable"]

active: TracingHooks | None = None
"""The hooks the traced parts call; None while tracing is off."""


def enable(tracer_provider: TracerProvider | None = None) -> None:
    """Trace reconciles, the watch events that queue them, API requests and webhook
    reviews with OpenTelemetry (the ``tracing`` extra: ``pip install
    'reconcilekit[tracing]'``), and add ``trace_id`` and ``span_id`` to log records.

    ``tracer_provider`` None: the global provider (``opentelemetry.trace``'s, as
    OpenTelemetry's libraries do), a no-op until the application sets one, after
    which its spans are recorded. Calling it again replaces the provider.
    Raises ImportError naming the extra when OpenTelemetry is not installed, and
    TypeError when ``tracer_provider`` is not a TracerProvider.
    """
    global active
    if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer",
                                                            None)):
        raise TypeError(f"tracer_provider must be an OpenTelemetry TracerProvider, not "
                        f"{type(tracer_provider).__name__}")
    try:
        from .otel_hooks import OpenTelemetryHooks
    except ModuleNotFoundError as err:
        if not (err.name or "").startswith("opentelemetry"):
            raise
        raise ImportError("tracing needs OpenTelemetry's API, which is not installed: "
                          "pip install 'reconcilekit[tracing]'") from None
    hooks = OpenTelemetryHooks(tracer_provider)
    active = hooks
    set_trace_ids(hooks.current_ids)


def disable() -> None:
    """Stop tracing: no span is started from now on (those running end as usual)."""
    global active
    active = None
    set_trace_ids(None)
