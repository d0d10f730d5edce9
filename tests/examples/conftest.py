"""Fixtures for the CNClaim example's tests (tests/examples).

``examples`` is a folder of the repository, not an installed package: it is
importable when pytest runs from the repository root (``python -m pytest``
puts the working directory on the path); the line below makes ``pytest``
run from anywhere find it too.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reconcilekit import Client
from reconcilekit.testing import Cluster

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from examples.cnclaim import install_crds  # noqa: E402  (needs the path above)


@pytest.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    """A reconcilekit client for the test's API server, with the CNClaim CRDs installed."""
    async with Client(apiserver.configuration) as c:
        await install_crds(c)
        yield c
