"""The CNClaim operator's demo harness: the command line, the scenario, the no-cluster mode.

What runs the operator for a person watching, not the operator itself:
``cli`` (``python -m examples.cnclaim``), ``local`` (the in-process API
server), ``run`` (the operator next to the scenario), ``scenario`` (the steps
and the tables) and ``shard_demo`` (three sharded replicas). The operator's
modules, one level up, never import this package
(``tests/examples/test_cnclaim_layout.py`` checks every import).
"""
