"""The public surface: ``__all__`` is sorted, complete, and every name resolves."""

from __future__ import annotations

import types

import pytest

import reconcilekit
import reconcilekit.testing


@pytest.mark.parametrize("module", [reconcilekit, reconcilekit.testing])
def test_all_is_sorted_complete_and_resolves(module: types.ModuleType) -> None:
    exported = list(module.__all__)
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert getattr(module, name) is not None, name
    public = {name for name, value in vars(module).items()
              if not name.startswith("_") and not isinstance(value, types.ModuleType)
              and name != "annotations"}
    assert public == set(exported)
