"""The layering of reconcilekit.testing, read from the code's own imports.

Every import (absolute or relative, at module level, under ``TYPE_CHECKING``
or inside a function) between modules of ``reconcilekit/testing`` is an edge;
the graph must have no cycle, the emulation (``reconcilekit/testing/apiserver``)
must import nothing of the test kit around it, and each part of the
emulation imports only parts below it (the order of its ``__init__``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import reconcilekit.testing

TESTING = Path(reconcilekit.testing.__file__).parent
PACKAGE = "reconcilekit.testing"
EMULATION = f"{PACKAGE}.apiserver"
# bottom to top, as reconcilekit/testing/apiserver/__init__.py describes them
LAYERS = ("extra", "kubeconfig", "machinery", "patching", "storage", "registry", "webhook_client",
          "apiextensions", "authorization", "admission", "controllers", "endpoints",
          "kube_apiserver")


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def _imported(tree: ast.AST, module: str, is_package: bool,
              known: Mapping[str, Path]) -> Iterator[str]:
    """The modules of ``known`` that ``module`` imports, wherever the import stands."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[:len(base) - node.level + 1]
                head = ".".join(anchor + ([node.module] if node.module else []))
            else:
                head = node.module or ""
            # ``from X import Y`` imports X, and X.Y when Y is a module
            targets = [head] + [f"{head}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module:
                yield target


def import_graph(root: Path = TESTING, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules under ``root`` it imports."""
    files = {_module_name(p, root, package): p for p in root.rglob("*.py")}
    return {name: set(_imported(ast.parse(path.read_text()), name,
                                path.name == "__init__.py", files))
            for name, path in files.items()}


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its modules in order, the first repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def _layer(module: str) -> str:
    return module.removeprefix(EMULATION + ".").split(".")[0]


def test_reconcilekit_testing_has_no_import_cycle() -> None:
    assert find_cycle(import_graph()) is None


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("def f():\n    from .b import g\n")
    (tmp_path / "b.py").write_text("from .c import h\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\n"
                                   "if TYPE_CHECKING:\n    from pkg import a\n")
    assert find_cycle(import_graph(tmp_path, "pkg")) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]


def test_the_emulation_imports_nothing_of_the_test_kit() -> None:
    wrong = sorted(f"{module} -> {target}"
                   for module, targets in import_graph().items() if module.startswith(EMULATION)
                   for target in targets if not target.startswith(EMULATION))
    assert wrong == []


def test_each_part_of_the_emulation_imports_only_parts_below_it() -> None:
    graph = import_graph()
    assert {_layer(m) for m in graph if m.startswith(EMULATION + ".")} == set(LAYERS)
    upward = sorted(f"{module} -> {target}"
                    for module, targets in graph.items() if module.startswith(EMULATION + ".")
                    for target in targets if target.startswith(EMULATION + ".")
                    and LAYERS.index(_layer(target)) > LAYERS.index(_layer(module)))
    assert upward == []
