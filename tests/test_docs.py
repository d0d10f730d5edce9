"""Code in the docs is run, so it cannot drift from the library."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_testing_guide_worked_example_passes(tmp_path: Path) -> None:
    blocks = [b for b in _python_blocks((DOCS / "testing.md").read_text())
              if "async def test_" in b]
    assert len(blocks) == 1, "docs/testing.md should hold one runnable worked example"
    module = tmp_path / "test_worked_example.py"
    module.write_text(blocks[0])
    got = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
         "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function",
         "--rootdir", str(tmp_path), str(module)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "RECONCILEKIT_TEST_KUBECONFIG"})
    assert got.returncode == 0, got.stdout + got.stderr
    assert "1 passed" in got.stdout
