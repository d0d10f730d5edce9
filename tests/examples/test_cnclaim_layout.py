"""The CNClaim operator stands without its demo harness.

``examples/cnclaim/`` is the operator a reader studies; ``examples/cnclaim/demo/``
is the harness that runs it for a person watching (the command line, the
scenario, the no-cluster mode). Every import statement of every operator
module is read from its syntax tree, wherever it is (inside a function too),
and none may name the harness or ``reconcilekit.testing``. ``__main__.py``
is the one exception: it is the entry that hands ``python -m
examples.cnclaim`` over to the harness.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPERATOR = ROOT / "examples" / "cnclaim"
HARNESS = "examples.cnclaim.demo"
FORBIDDEN = (HARNESS, "reconcilekit.testing")
ENTRY = OPERATOR / "__main__.py"


def module_name(path: Path) -> str:
    """The dotted name ``path`` (a file under the repository root) is imported as."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, *, is_package: bool = False) -> set[str]:
    """Every module an import in ``source`` (the code of ``module``) may load, absolute.

    ``from X import a`` counts as both ``X`` and ``X.a`` (``a`` may be a
    submodule); relative imports are resolved against ``module``'s package;
    ``importlib.import_module`` and ``__import__`` with a literal name count too.
    """
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[:len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and (name := _literal_import(node)):
            found.add(name)
    return found


def _literal_import(call: ast.Call) -> str | None:
    """The module ``__import__("m")`` or ``[importlib.]import_module("m")`` names."""
    func = call.func
    called = func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else "")
    if called not in ("__import__", "import_module") or not call.args:
        return None
    first = call.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) \
        else None


def forbidden_imports(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """The imports of ``source`` that name the harness or ``reconcilekit.testing``."""
    return sorted(name for name in imported_modules(source, module, is_package=is_package)
                  if any(name == f or name.startswith(f + ".") for f in FORBIDDEN))


def operator_modules() -> list[Path]:
    """Every Python file of the operator: the package, less demo/ and the entry."""
    harness = OPERATOR / "demo"
    return sorted(p for p in OPERATOR.rglob("*.py")
                  if p != ENTRY and harness not in p.parents)


def test_the_operator_modules_are_the_ones_a_reader_studies() -> None:
    names = {p.name for p in operator_modules()}
    assert {"claim.py", "claimset.py", "pool.py", "bindable.py", "pods.py", "index.py",
            "admission.py", "resources.py", "spec.py", "status.py", "operator.py",
            "observe.py", "__init__.py"} <= names, names
    assert not names & {"cli.py", "local.py", "run.py", "scenario.py", "shard_demo.py"}


@pytest.mark.parametrize("path", operator_modules(), ids=lambda p: p.name)
def test_no_operator_module_imports_the_harness(path: Path) -> None:
    module = module_name(path)
    assert forbidden_imports(path.read_text(), module,
                             is_package=path.name == "__init__.py") == [], module


def test_the_entry_hands_over_to_the_harness() -> None:
    """The one operator-level file allowed to import the harness, and it does."""
    assert "examples.cnclaim.demo.cli" in forbidden_imports(ENTRY.read_text(),
                                                            "examples.cnclaim.__main__")


@pytest.mark.parametrize(("source", "module"), [
    ("from .demo.scenario import Progress", "examples.cnclaim.claim"),
    ("from .demo import cli", "examples.cnclaim.claim"),
    ("from . import demo", "examples.cnclaim.claim"),
    ("from . import demo", "examples.cnclaim"),
    ("from ..cnclaim.demo import run", "examples.cnclaim.pool"),
    ("from examples.cnclaim import demo", "examples.cnclaim.pool"),
    ("import examples.cnclaim.demo.local", "examples.cnclaim.pool"),
    ("def f():\n    from .demo.local import run_local\n", "examples.cnclaim.operator"),
    ("import importlib\nimportlib.import_module('examples.cnclaim.demo.cli')",
     "examples.cnclaim.operator"),
    ("from reconcilekit.testing import APIServer", "examples.cnclaim.operator"),
    ("import reconcilekit.testing", "examples.cnclaim.operator"),
    ("from reconcilekit import testing", "examples.cnclaim.operator"),
])
def test_the_check_finds_every_form_of_import(source: str, module: str) -> None:
    """The check can fail: each way of spelling an import of the harness is caught."""
    assert forbidden_imports(source, module, is_package=module == "examples.cnclaim")


@pytest.mark.parametrize("source", [
    "from .demonstration import x",  # a module whose name merely starts like the harness
    "from .resources import CNCLAIMS",
    "from reconcilekit import Client",
    "from reconcilekit.webhook import WebhookServer",
    "demo = 'examples.cnclaim.demo'",
])
def test_the_check_passes_what_is_not_the_harness(source: str) -> None:
    assert forbidden_imports(source, "examples.cnclaim.claim") == []
