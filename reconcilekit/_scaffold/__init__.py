"""Scaffolding: ``python -m reconcilekit init`` and ``create kind`` write operator projects.

The command line registers the commands with :func:`add_commands` and runs
them with :func:`run` (:mod:`.commands`). A project is rendered from the
templates in ``templates/`` (:mod:`.rendering`, :mod:`.layout`) and
described by its ``PROJECT.toml`` (:mod:`.project_record`), from which the
registry module wiring its kinds into the manager is written.
"""

from .commands import COMMANDS as COMMANDS
from .commands import add_commands as add_commands
from .commands import run as run

__all__ = ["COMMANDS", "add_commands", "run"]
