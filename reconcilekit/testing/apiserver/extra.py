"""The ``testing`` extra: what the in-process API server needs beyond an operator's install.

``pip install reconcilekit`` brings what an operator runs on; the in-process
:class:`~reconcilekit.testing.APIServer` also validates CRDs with JSON
schema and evaluates CEL (CRD rules, webhook ``matchConditions``), which
``pip install 'reconcilekit[testing]'`` adds. :func:`require_testing_extra`
is called where a server is made, so that asking for one without them is
one :class:`MissingExtraError` naming the extra, never a ModuleNotFoundError
from deep inside the first request that needs a package.
"""

from __future__ import annotations

import importlib.util
from typing import Final

__all__ = ["TESTING_EXTRA", "MissingExtraError", "missing_testing_packages",
           "require_testing_extra"]

# the distribution the testing extra installs for each module the server imports
TESTING_EXTRA: Final = {
    "jsonschema": "jsonschema",
    "cel": "common-expression-language",
    "yaml": "PyYAML",
}


class MissingExtraError(ImportError):
    """Something that needs an extra was asked for without it; the message says what to
    install, e.g. ``pip install 'reconcilekit[testing]'``."""


def missing_testing_packages() -> list[str]:
    """The distributions of the testing extra that are not installed, sorted (looked up,
    not imported: the CEL package's import is slow and is left to its first use)."""
    missing = []
    for module, distribution in TESTING_EXTRA.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a blocked or half-removed module
            found = False
        if not found:
            missing.append(distribution)
    return sorted(missing, key=str.lower)


def require_testing_extra(what: str) -> None:
    """Return if the testing extra is installed; otherwise raise :class:`MissingExtraError`:
    ``WHAT needs the 'testing' extra: pip install 'reconcilekit[testing]' (missing: ...)``."""
    missing = missing_testing_packages()
    if missing:
        raise MissingExtraError(f"{what} needs the 'testing' extra: pip install "
                                f"'reconcilekit[testing]' (missing: {', '.join(missing)})")
