"""The public surface: every public module's ``__all__`` is sorted, complete, resolves, and
re-exports each name under the name it is defined with; the root stays small."""

from __future__ import annotations

import importlib
import types

import pytest

import reconcilekit

PUBLIC_MODULES = [
    "reconcilekit",
    "reconcilekit.conditions",
    "reconcilekit.crd",
    "reconcilekit.finalizers",
    "reconcilekit.kinds",
    "reconcilekit.lowlevel",
    "reconcilekit.metrics",
    "reconcilekit.ownership",
    "reconcilekit.rbac",
    "reconcilekit.sharding",
    "reconcilekit.testing",
    "reconcilekit.tracing",
    "reconcilekit.upsert",
    "reconcilekit.webhook",
    "reconcilekit.workqueue",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_complete_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)
    for export in exported:
        assert getattr(module, export) is not None, export
    if name in ("reconcilekit.conditions", "reconcilekit.ownership", "reconcilekit.rbac",
                "reconcilekit.upsert"):
        return  # modules with code of their own, not facades
    public = {n for n, value in vars(module).items()
              if not n.startswith("_") and not isinstance(value, types.ModuleType)
              and n != "annotations"}
    assert public == set(exported)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_names_are_exported_under_the_name_they_are_defined_with(name: str) -> None:
    module = importlib.import_module(name)
    renamed = [(export, value.__name__) for export in module.__all__
               if isinstance(value := getattr(module, export), type | types.FunctionType)
               and value.__name__ != export]
    assert renamed == []


def test_the_root_keeps_what_an_author_uses_on_day_one() -> None:
    assert len(reconcilekit.__all__) <= 80


def test_a_name_lives_in_one_concept_module() -> None:
    """A name is exported by one public module; the root may repeat the options a
    Manager takes (``Sharding``) beside their concept module."""
    homes: dict[str, list[str]] = {}
    for name in PUBLIC_MODULES:
        for export in importlib.import_module(name).__all__:
            homes.setdefault(export, []).append(name)
    shared = {export: where for export, where in homes.items() if len(where) > 1}
    assert shared == {"Sharding": ["reconcilekit", "reconcilekit.sharding"]}


def test_an_object_has_one_public_home() -> None:
    """The same object is exported by one public module under one name: comparing the
    objects (a resource by group, version and plural), not only their names, finds an
    alias kept under another name, a second copy of a resource, and a package that
    re-exports what its parent exports (the in-process server's package exports
    nothing; :mod:`reconcilekit.testing` exports its ``APIServer``)."""
    homes: dict[object, list[str]] = {}
    for name in [*PUBLIC_MODULES, "reconcilekit.testing.apiserver"]:
        module = importlib.import_module(name)
        for export in module.__all__:
            value = getattr(module, export)
            if isinstance(value, str | int | float | tuple | frozenset):
                continue  # equal constants may share an object without being one fact
            identity = ((value.group, value.version, value.plural)
                        if isinstance(value, reconcilekit.Resource) else id(value))
            homes.setdefault(identity, []).append(f"{name}.{export}")
    shared = sorted(where for where in homes.values() if len(where) > 1)
    assert shared == [["reconcilekit.Sharding", "reconcilekit.sharding.Sharding"]]
