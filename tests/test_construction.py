"""Objects of the library are whole when made: no module sets an attribute of another object.

What a watcher, an informer, a controller (or anything else of the library)
needs is given to its constructor; an attribute that changes over an
object's life changes through a method of that object. So the only attribute
assignments in the library's code are to ``self`` (or ``cls``), and this test
reads every module (with :mod:`ast`) to keep it so: ``x.attr = ...``,
``x.attr += ...``, ``del x.attr``, ``setattr(x, ...)`` and
``object.__setattr__(x, ...)`` for any ``x`` but ``self`` and ``cls`` fail
it, unless ``ALLOWED`` names that module and that ``x`` with the reason.
Writes into dicts (``obj["metadata"] = ...``) are not attribute assignments.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reconcilekit"
OWN = {"self", "cls"}

# (module, the object written to, as written) -> why that object is set up from outside.
ALLOWED: dict[tuple[str, str], str] = {
    ("_client/config.py", "cfg"): "a kubernetes_asyncio Configuration, configured by its "
                                  "attributes",
    ("testing/_control_plane.py", "cfg"): "a kubernetes_asyncio Configuration, configured by "
                                          "its attributes",
    ("testing/apiserver/kube_apiserver.py", "cfg"): "a kubernetes_asyncio Configuration, "
                                                    "configured by its attributes",
    ("testing/apiserver/endpoints/filters.py", "response"): "an aiohttp Response, whose body "
                                                            "is set as aiohttp documents",
    ("_client/transport.py", "context"): "an ssl.SSLContext, configured by its attributes",
    ("webhook/_certificates.py", "context"): "an ssl.SSLContext, configured by its attributes",
    ("testing/_cluster.py", "rest"): "kubernetes_asyncio's REST client: its aiohttp session is "
                                     "replaced by one that ignores the proxy variables, which "
                                     "it has no option for",
    ("_foundations/logging.py", "record"): "a logging.LogRecord: a logging.Filter adds fields "
                                           "to the records it passes, as logging documents",
    ("_manager/prometheus_metrics.py", "family"): "a prometheus_client Metric made afresh by "
                                                  "collect(), its _created samples dropped",
    ("testing/_pytest_plugin.py", "session"): "pytest's Session: a pytest_sessionfinish hook "
                                              "sets exitstatus, as pytest documents",
    ("_foundations/selectors.py", "selector"): "LabelSelector.nothing(): a constructor of the "
                                               "class finishing the instance it just made",
}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    """The expressions ``node`` assigns to or deletes, tuples unpacked."""
    if isinstance(node, ast.Assign | ast.Delete):
        pending = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        pending = [node.target]
    else:
        return
    while pending:
        target = pending.pop()
        if isinstance(target, ast.Tuple | ast.List):
            pending.extend(target.elts)
        elif isinstance(target, ast.Starred):
            pending.append(target.value)
        else:
            yield target


def _written(node: ast.AST) -> Iterator[ast.expr]:
    """The objects whose attributes ``node`` sets or deletes."""
    for target in _targets(node):
        if isinstance(target, ast.Attribute):
            yield target.value
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        if ((isinstance(func, ast.Name) and func.id in ("setattr", "delattr"))
                or (isinstance(func, ast.Attribute)
                    and func.attr in ("__setattr__", "__delattr__"))):
            yield node.args[0]


def _outside_writes() -> dict[tuple[str, str], list[int]]:
    """Every write to an attribute of an object other than ``self``/``cls``: (module,
    the object as written) -> the lines."""
    found: dict[tuple[str, str], list[int]] = {}
    for path in _modules():
        module = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for obj in _written(node):
                if not (isinstance(obj, ast.Name) and obj.id in OWN):
                    found.setdefault((module, ast.unparse(obj)), []).append(node.lineno)
    return found


def test_no_module_sets_an_attribute_of_another_object() -> None:
    outside = {where: lines for where, lines in _outside_writes().items()
               if where not in ALLOWED}
    assert outside == {}, (
        "attributes set from outside their object (module, object): pass the value to "
        "its constructor, or let a method of the object change it")


def test_every_allowed_write_is_still_made() -> None:
    """The allowances stay exactly what the code needs."""
    assert set(ALLOWED) <= set(_outside_writes())


def test_the_check_sees_the_writes_it_is_meant_to() -> None:
    source = (
        "controller.gate = gate\n"
        "self.watcher.options = o\n"
        "a.x, (b.y, self.z) = 1, (2, 3)\n"
        "counts.n += 1\n"
        "del cache.admit\n"
        "setattr(informer, 'admit', f)\n"
        "object.__setattr__(store, 'x', 1)\n"
        "self.ok = cls.ok = obj['key'] = 1\n")
    written = [ast.unparse(obj) for node in ast.walk(ast.parse(source))
               for obj in _written(node)
               if not (isinstance(obj, ast.Name) and obj.id in OWN)]
    assert sorted(written) == sorted(["controller", "self.watcher", "a", "b", "counts",
                                      "cache", "informer", "store"])
