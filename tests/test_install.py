"""A lean install: ``import reconcilekit`` loads no command-line toolkit and none of the
in-process API server's packages, and the server without the ``testing`` extra is one
clear error naming it (the extra's packages blocked in a fresh interpreter)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# what only the testing extra (jsonschema, common-expression-language) brings, and what the
# CEL package's own command line (typer, rich, prompt_toolkit, pygments) would load
SERVER_ONLY = ("jsonschema", "cel", "typer", "rich", "prompt_toolkit", "pygments")
BLOCKED = ("cel", "jsonschema")  # as if not installed: importing one is an ImportError
MESSAGE = ("reconcilekit.testing.APIServer needs the 'testing' extra: pip install "
           "'reconcilekit[testing]' (missing: common-expression-language, jsonschema)")


def _python(code: str, *, blocked: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter importing this checkout, ``blocked`` modules absent."""
    prelude = f"import sys\nfor _name in {blocked!r}:\n    sys.modules[_name] = None\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_import_reconcilekit_loads_neither_the_servers_packages_nor_a_cli_toolkit() -> None:
    proc = _python("import reconcilekit, reconcilekit.webhook, json\n"
                   f"print(json.dumps(sorted(m for m in {SERVER_ONLY!r} if m in sys.modules)))")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_import_reconcilekit_leaves_what_only_some_operators_need_unloaded() -> None:
    # Every operator pays for its imports at every start: cryptography is needed only to
    # generate a certificate, importlib.metadata not at all (the version is a constant).
    proc = _python("import reconcilekit, reconcilekit.webhook, json\n"
                   "print(json.dumps(sorted(m for m in ('cryptography', 'importlib.metadata') "
                   "if m in sys.modules)))\n"
                   "print(reconcilekit.__version__)")
    assert proc.returncode == 0, proc.stderr
    loaded, version = proc.stdout.splitlines()
    assert json.loads(loaded) == []
    assert version == importlib.metadata.version("reconcilekit")


def test_the_operator_side_runs_without_the_testing_extra() -> None:
    proc = _python("from reconcilekit.sharding import ShardSelector\n"
                   "from reconcilekit.webhook import WebhookServer, exclude_users\n"
                   "from reconcilekit import Resource\n"
                   "s = ShardSelector.of('object.metadata.uid', [(0, 2**63)])\n"
                   "assert ShardSelector.parse(str(s)) == s\n"
                   "server = WebhookServer(port=0)\n"
                   "async def allow(request): ...\n"
                   "widgets = Resource('example.com', 'v1', 'Widget', 'widgets')\n"
                   "server.validator(widgets, match_conditions=exclude_users('me'))(allow)\n"
                   "print('ok')", blocked=BLOCKED)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"


def test_the_test_kit_without_the_server_imports_without_the_testing_extra() -> None:
    proc = _python("from reconcilekit.testing import FakeClock, eventually\n"
                   "import reconcilekit.testing._pytest_plugin\n"
                   "print('ok')", blocked=BLOCKED)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"


def test_the_in_process_server_without_the_testing_extra_is_one_error_naming_it() -> None:
    proc = _python("from reconcilekit.testing import APIServer\n"
                   "try:\n"
                   "    APIServer()\n"
                   "except ImportError as err:\n"
                   "    print(err)\n", blocked=BLOCKED)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == MESSAGE + "\n"


def test_its_command_line_without_the_testing_extra_says_so_in_one_line(tmp_path: Path
                                                                       ) -> None:
    argv = ["python -m reconcilekit.testing", "--kubeconfig-out", str(tmp_path / "config")]
    proc = _python("import runpy\n"
                   f"sys.argv = {argv!r}\n"
                   "runpy.run_module('reconcilekit.testing', run_name='__main__', "
                   "alter_sys=True)", blocked=BLOCKED)
    assert (proc.returncode, proc.stderr) == (1, f"error: {MESSAGE}\n")


def test_the_bundled_example_without_the_testing_extra_says_so_in_one_line() -> None:
    proc = _python("import runpy\n"
                   "sys.argv = ['python -m examples.cnclaim']\n"
                   "runpy.run_module('examples.cnclaim', run_name='__main__', alter_sys=True)",
                   blocked=BLOCKED)
    assert (proc.returncode, proc.stderr) == (1, f"error: {MESSAGE}\n")
