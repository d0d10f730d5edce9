"""Tracing with OpenTelemetry, optional: the switch every part checks (off by default,
and then nothing of OpenTelemetry is imported), the hooks the parts call when it is on,
the keys a controller has pending, and the spans made of them."""
