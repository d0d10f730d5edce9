"""Code in the docs is run, so it cannot drift from the library."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
ROOT = DOCS.parent
SNIPPET = re.compile(r'--8<-- "([^"]+)"')  # pymdownx.snippets, paths from ROOT


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


BACKEND_VARIABLES = ("RECONCILEKIT_TEST_KUBECONFIG", "RECONCILEKIT_TEST_ASSETS",
                     "KUBEBUILDER_ASSETS")


def test_testing_guide_worked_examples_pass(tmp_path: Path) -> None:
    blocks = [b for b in _python_blocks((DOCS / "testing.md").read_text())
              if "async def test_" in b]
    assert len(blocks) == 2, "docs/testing.md should hold its two runnable worked examples"
    for i, block in enumerate(blocks):
        module = tmp_path / f"test_worked_example_{i}.py"
        module.write_text(block)
    got = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
         "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function",
         "--rootdir", str(tmp_path), str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        # the examples inject faults: they run on the in-process server whatever the backend
        env={k: v for k, v in os.environ.items() if k not in BACKEND_VARIABLES})
    assert got.returncode == 0, got.stdout + got.stderr
    assert "2 passed" in got.stdout


def _files(text: str) -> dict[str, str]:
    """Python blocks whose first line is ``# name.py``, by that name."""
    out = {}
    for block in _python_blocks(text):
        first, _, rest = block.partition("\n")
        if first.startswith("# ") and first.endswith(".py"):
            out[first[2:]] = rest
    return out


def _page_passes_its_own_test(tmp_path: Path, page: str, files: set[str], test: str, *,
                               in_process: bool) -> None:
    """Write the page's ``# name.py`` blocks (exactly ``files``) and run ``test`` with pytest
    in a process of its own; ``in_process``: on the in-process server whatever the backend."""
    found = _files((DOCS / page).read_text())
    assert set(found) == files
    for name, code in found.items():
        (tmp_path / name).write_text(code)
    got = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
         "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function",
         "--rootdir", str(tmp_path), str(tmp_path / test)],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
        env={k: v for k, v in os.environ.items()
             if not (in_process and k in BACKEND_VARIABLES)})
    assert got.returncode == 0, got.stdout + got.stderr
    assert "1 passed" in got.stdout


def _included(text: str) -> list[str]:
    """The files a page includes with pymdownx.snippets (``--8<-- "path"`` lines), in order;
    a line spelling an include any other way fails (this is the one form read here)."""
    paths = []
    for line in (line.strip() for line in text.splitlines() if "--8<--" in line):
        match = SNIPPET.fullmatch(line)
        assert match, f"write includes as --8<-- \"path\": {line!r}"
        paths.append(match[1])
    return paths


def test_every_file_a_page_includes_exists() -> None:
    """mkdocs fails on a missing include too (check_paths); this says so in the tests, and
    of a part (``path:name``), that the file marks it (an unmarked part includes nothing)."""
    for page in sorted(DOCS.rglob("*.md")):
        for included in _included(page.read_text()):
            path, _, part = included.partition(":")
            assert (ROOT / path).is_file(), \
                f"{page.relative_to(DOCS)} includes {path}: no such file"
            text = (ROOT / path).read_text()
            assert not part or all(f"# --8<-- [{end}:{part}]" in text
                                   for end in ("start", "end")), \
                f"{page.relative_to(DOCS)} includes {included}: no such part in {path}"


def test_the_tutorial_shows_the_example_package_and_its_test() -> None:
    """The tutorial's code is examples/configmap_to_secret and its test, then parts of the
    KVStore operator and its test, included as they are, with no second copy: tests/examples
    runs them on both backends (and runs the package's command until SIGTERM, and mypy
    --strict on the KVStore files), which is what keeps the tutorial working."""
    text = (DOCS / "tutorial.md").read_text()
    kvstore = "tests/examples/kvstore_operator.py"
    assert _included(text) == ["examples/configmap_to_secret/operator.py",
                               "tests/examples/test_configmap_to_secret.py",
                               "examples/configmap_to_secret/__main__.py",
                               f"{kvstore}:kind", f"{kvstore}:reconcile",
                               f"{kvstore}:status", f"{kvstore}:cleanup",
                               "tests/examples/test_kvstore.py:scale"]
    blocks = _python_blocks(text)
    assert blocks and all(SNIPPET.fullmatch(b.strip()) for b in blocks), \
        "every python block of the tutorial is an included file"
    assert "python -m examples.configmap_to_secret kubeconfig.yaml" in text


def test_webhooks_guide_example_passes_its_own_test(tmp_path: Path) -> None:
    """On the backend of this run: the in-process server, or kube-apiserver in CI's second
    pass (the guide says the same test passes on both)."""
    _page_passes_its_own_test(tmp_path, "webhooks.md",
                              {"widget_webhooks.py", "test_widget_webhooks.py"},
                              "test_widget_webhooks.py", in_process=False)


def test_custom_kinds_page_example_passes_its_own_test(tmp_path: Path) -> None:
    """The kind the page defines is installed and judged by the API server of this run."""
    _page_passes_its_own_test(tmp_path, "concepts/custom-kinds.md",
                              {"gizmos.py", "test_gizmos.py"}, "test_gizmos.py",
                              in_process=False)


def test_the_api_reference_has_a_page_per_concept_covering_every_public_name() -> None:
    """Each root name is documented on exactly one concept page; each public module has
    its page; the navigation lists every page."""
    import reconcilekit

    pages = {page.stem: page.read_text() for page in (DOCS / "reference").glob("*.md")}
    documented: dict[str, list[str]] = {}
    for stem, text in pages.items():
        for name in re.findall(r"^::: reconcilekit\.([A-Za-z_]+)$", text, flags=re.M):
            documented.setdefault(name, []).append(stem)
    root = {name: where for name, where in documented.items() if name in reconcilekit.__all__}
    assert set(root) == set(reconcilekit.__all__), "root names without a reference page"
    assert {name: where for name, where in root.items() if len(where) > 1} == {}
    modules = {"conditions", "crd", "finalizers", "lowlevel", "metrics", "ownership", "rbac",
               "sharding", "testing", "tracing", "upsert", "webhook", "workqueue"}
    assert all(pages.get(module, "").strip().endswith(f"::: reconcilekit.{module}")
               for module in modules)
    nav = (DOCS.parent / "mkdocs.yml").read_text()
    assert all(f"reference/{stem}.md" in nav for stem in pages)


def test_every_file_and_test_the_docs_name_exists() -> None:
    """A path the docs cite (``tests/x.py``, ``tests/x.py::test_y``, ``examples/...``) is a
    file of the repository, and a named test or class is defined in it."""
    root = DOCS.parent
    pages = [*DOCS.rglob("*.md"), root / "README.md", *(root / "examples").rglob("*.md")]
    cited = re.compile(r"`((?:tests|benchmarks|examples|reconcilekit|docs)/[\w/.\-]+?)"
                       r"(?:::([\w:\[\]-]+))?`")
    missing = []
    for page in pages:
        for path, name in cited.findall(page.read_text()):
            if not (root / path).exists():
                missing.append(f"{page.name}: {path}")
            elif name:
                defined = name.split("::")[-1].split("[")[0]
                if not re.search(rf"^\s*(?:async def|def|class) {defined}\b|^{defined} = ",
                                 (root / path).read_text(), flags=re.M):
                    missing.append(f"{page.name}: {path}::{name}")
    assert missing == []


def test_the_manifests_guide_shows_the_rules_the_generator_gives() -> None:
    """docs/manifests.md's ClusterRole rules for the Website operator are a fresh generation's."""
    import yaml

    from reconcilekit.__main__ import generate_manifests

    files = generate_manifests("examples.website.operator:build", command="docs",
                               namespace="website-system")
    [role] = [d for d in yaml.safe_load_all(files["rbac.yaml"]) if d and d["kind"] == "ClusterRole"]
    text = (DOCS / "manifests.md").read_text()
    [shown] = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    assert yaml.safe_load(shown) == role["rules"]
    [declared] = re.findall(r"```python\nclass WebsiteReconciler\(Reconciler\):\n(.*?)```",
                            text, flags=re.S)
    assert declared in (ROOT / "examples" / "website" / "operator.py").read_text()
