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


def _stem(path: Path) -> str:
    return (path.stem if path.suffix == ".py" else path.name).lstrip("_")


def test_no_two_modules_or_classes_share_a_name() -> None:
    """A name means one thing across the package: no two modules (or a module and a
    package) and no two classes are named alike. The exceptions: a public concept module
    and the private module it re-exports (``metrics.py`` over ``_metrics.py``), each
    package's ``__main__.py`` (what ``python -m`` runs), and the classes of the generated
    ``kinds`` package, which keep Kubernetes' names (core/v1 and events.k8s.io/v1 both
    have an ``Event``)."""
    package = ROOT / "reconcilekit"
    places: dict[str, list[Path]] = {}
    for path in [*package.rglob("*.py"), *(p for p in package.rglob("*") if p.is_dir())]:
        if path.name in ("__init__.py", "__main__.py", "__pycache__") or path == package:
            continue
        places.setdefault(_stem(path), []).append(path)
    shared = {stem: sorted(str(p.relative_to(ROOT)) for p in paths)
              for stem, paths in places.items() if len(paths) > 1
              and not (len(paths) == 2 and {p.parent for p in paths} == {package}
                       and {p.name for p in paths} == {f"{stem}.py", f"_{stem}.py"})}
    assert shared == {}
    classes: dict[str, list[str]] = {}
    for path in package.rglob("*.py"):
        if path.is_relative_to(package / "kinds"):
            continue
        for name in re.findall(r"^class (\w+)", path.read_text(), flags=re.M):
            classes.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in classes.items() if len(where) > 1} == {}
