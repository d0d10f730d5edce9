"""examples/cnclaim/kinds.py defines the kinds of manifests/crds.yaml: each kind's ``.crd()``
is the YAML document of its name, every field, validation, default, CEL rule, printer
column and subresource alike (``required`` lists compared as sets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from examples.cnclaim.kinds import CNCLAIM_KIND, CNCLAIMSET_KIND, CNPOOL_KIND
from reconcilekit import Resource
from reconcilekit.crd import CustomKind

CRDS = Path(__file__).resolve().parents[2] / "examples" / "cnclaim" / "manifests" / "crds.yaml"


def normalized(node: Any) -> Any:
    """``node`` with each ``required`` list sorted (its order means nothing)."""
    if isinstance(node, dict):
        return {k: sorted(v) if k == "required" and isinstance(v, list) else normalized(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [normalized(v) for v in node]
    return node


@pytest.mark.parametrize("kind", [CNPOOL_KIND, CNCLAIM_KIND, CNCLAIMSET_KIND],
                         ids=lambda k: k.kind)
def test_each_kind_makes_the_crd_of_the_manifests(kind: CustomKind[Any]) -> None:
    documents = {d["metadata"]["name"]: d for d in yaml.safe_load_all(CRDS.read_text())}
    assert normalized(kind.crd()) == normalized(documents[kind.name])


def test_the_resources_are_the_operators() -> None:
    assert CNCLAIM_KIND.resource == Resource("core.matrixorigin.io", "v1alpha1", "CNClaim",
                                             "cnclaims")
    assert CNCLAIM_KIND.resource.definition is CNCLAIM_KIND
