"""Tracing with OpenTelemetry, an optional extra (``pip install 'reconcilekit[tracing]'``).

Off by default, and then free: nothing of OpenTelemetry is imported. Turn it
on once, where the application sets up OpenTelemetry::

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    import reconcilekit.tracing

    trace.set_tracer_provider(TracerProvider(...))  # exporters, sampler, resource
    reconcilekit.tracing.enable()                  # or enable(tracer_provider=provider)

Every reconcile is then a span linked to the watch events that queued its
key, with a child span per API request (which carries ``traceparent`` to
kube-apiserver), webhook reviews are server spans, and log records carry
the current ``trace_id`` and ``span_id``. See the tracing concept page.
"""

from ._tracing.switch import disable as disable
from ._tracing.switch import enable as enable

__all__ = ["disable", "enable"]
