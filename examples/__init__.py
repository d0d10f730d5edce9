"""Example operators built on reconcilekit (run them with ``python -m examples.NAME``)."""
