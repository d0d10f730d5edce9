"""The ``Manager``: one client, one cache, the controllers, the replicas' coordination,
the event recorder, the Prometheus series and the HTTP endpoints, run and shut down as one."""
