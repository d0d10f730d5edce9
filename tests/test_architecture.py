"""docs/architecture.md draws the layers the import contracts enforce (pyproject.toml's
[tool.importlinter], checked by ``lint-imports`` in CI) and names every module of the
library: the page, the contracts and the code cannot drift apart."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reconcilekit"
PAGE = (ROOT / "docs" / "architecture.md").read_text()
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"]


def _section(heading: str) -> str:
    """The text under the heading that starts with ``heading``, up to the next heading."""
    (start,) = [m.end() for m in re.finditer(rf"^{re.escape(heading)}.*$", PAGE, flags=re.M)]
    return PAGE[start:].split("\n#", 1)[0]


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells; ``\\|`` inside a cell is a pipe, not a border."""
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", row)[1:-1]]


def _rows(section: str) -> list[list[str]]:
    return [_cells(line) for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("|---")][1:]


def _names(cell: str) -> list[str]:
    return [name.removesuffix(".py").removesuffix("/") for name in re.findall(r"`([\w./]+)`", cell)]


def _contract(container: str) -> list[str]:
    (layers,) = [c["layers"] for c in CONTRACTS
                 if c["type"] == "layers" and c["containers"] == [container]]
    return list(layers)


def _private_packages() -> list[str]:
    return sorted(p.name for p in PACKAGE.iterdir()
                  if p.name.startswith("_") and (p / "__init__.py").exists())


def test_the_documented_layers_are_the_enforced_ones() -> None:
    """Each row of the Layers table is one layer of the package's contract, its modules
    joined as the contract joins them (``|`` independent, ``:`` not)."""
    documented = [cells[1].replace("`", "") for cells in _rows(_section("## Layers"))]
    assert documented == _contract("reconcilekit")


def test_each_concept_package_documents_its_own_layers() -> None:
    """Every private concept package has a contract of its own and a table on the page
    whose rows are that contract's layers, top first, naming every module it holds."""
    for package in _private_packages():
        rows = [set(_names(cells[0])) for cells in _rows(_section(f"### `{package}/`"))
                if cells]
        layers = [{name.strip() for name in re.split(r"[:|]", layer)}
                  for layer in _contract(f"reconcilekit.{package}")]
        assert rows == layers, package
        modules = {p.stem for p in (PACKAGE / package).glob("*.py") if p.stem != "__init__"}
        assert set().union(*rows) == modules, package


def test_every_module_of_the_library_is_in_a_layer_and_on_the_page() -> None:
    top = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    layered = {name.strip() for layer in _contract("reconcilekit")
               for name in re.split(r"[:|]", layer)}
    assert top == layered
    public_table = {name for cells in _rows(_section("## Modules")) for name in _names(cells[0])}
    assert top - set(_private_packages()) <= public_table | {"__init__"}
    named_in_rows = {name for cells in _rows(_section("## Modules")) for name in
                     _names(cells[1])}
    for package in ("crd", "webhook"):
        modules = {p.stem for p in (PACKAGE / package).glob("_*.py") if p.stem != "__init__"}
        assert modules <= named_in_rows, package


def _stem(path: Path) -> str:
    return (path.stem if path.suffix == ".py" else path.name).lstrip("_")


def _one_concept(paths: list[Path]) -> bool:
    """Places that share a name and mean one thing: a public module (``metrics.py``),
    the private module or concept package behind it (``_metrics.py``, ``_workqueue/``),
    and a concept package's main module (``_cache/cache.py``)."""
    public = [p for p in paths if p.parent == PACKAGE and not p.name.startswith("_")]
    private = [p for p in paths if p.parent == PACKAGE and p.name.startswith("_")]
    nested = [p for p in paths if p.parent != PACKAGE]
    return (len(public) <= 1 and len(private) <= 1 and len(nested) <= 1
            and all(p.parent in private for p in nested))


def test_no_two_modules_or_classes_share_a_name() -> None:
    """A name means one thing across the package: no two modules (or a module and a
    package) and no two classes are named alike. The exceptions: the places of one
    concept (see ``_one_concept``), each package's ``__main__.py`` (what ``python -m``
    runs), and the classes of the generated ``kinds`` package, which keep Kubernetes'
    names (core/v1 and events.k8s.io/v1 both have an ``Event``)."""
    places: dict[str, list[Path]] = {}
    for path in [*PACKAGE.rglob("*.py"), *(p for p in PACKAGE.rglob("*") if p.is_dir())]:
        if path.name in ("__init__.py", "__main__.py", "__pycache__") or path == PACKAGE:
            continue
        places.setdefault(_stem(path), []).append(path)
    shared = {stem: sorted(str(p.relative_to(ROOT)) for p in paths)
              for stem, paths in places.items() if len(paths) > 1 and not _one_concept(paths)}
    assert shared == {}
    classes: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "kinds"):
            continue
        for name in re.findall(r"^class (\w+)", path.read_text(), flags=re.M):
            classes.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in classes.items() if len(where) > 1} == {}
