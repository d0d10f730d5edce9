"""docs/architecture.md draws the layers the import contract enforces (pyproject.toml's
[tool.importlinter], checked by ``lint-imports`` in CI): the two cannot drift apart."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    return [{name.strip() for name in re.split(r"[:|]", layer)} for layer in layers]


def _documented_layers() -> list[set[str]]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"^\| \d+ \|", line)]
    return [set(re.findall(r"`([\w.]+)`", row.split("|")[2])) for row in rows]


def test_the_documented_layers_are_the_enforced_ones() -> None:
    assert _documented_layers() == _contract_layers()


def test_every_module_of_the_library_is_in_a_layer() -> None:
    package = ROOT / "reconcilekit"
    top = {p.stem if p.is_file() else p.name for p in package.iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    assert top == set().union(*_contract_layers())
