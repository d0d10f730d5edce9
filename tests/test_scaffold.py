"""``python -m reconcilekit init`` and ``create kind``: a generated project is ruff-clean,
and with a second kind added passes its own CI script (ruff, mypy --strict, the manifests
up to date, its tests).

The script runs in a process of its own on this checkout's reconcilekit, with the backend
variables passed through: the project's tests run on the in-process server and, on a
kube-apiserver pass of this suite, on kube-apiserver too.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconcilekit._scaffold import COMMANDS, add_commands, run
from reconcilekit.testing._control_plane import assets_from_env
from reconcilekit.testing._pytest_plugin import backend

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TIMEOUT = 300  # seconds a step may take: a bound for a loaded machine, not a timing
DOCUMENTED_TREE = ROOT / "docs" / "scaffolding.md"
TREE_ENTRY = re.compile(r"^((?:│   |    )*)[├└]── (\S+)")
HEADERS = {"in-process": "the in-process API server",  # the pytest plugin's header line
           "control-plane": "kube-apiserver started from", "kubeconfig": "the cluster of"}


def scaffold(*argv: str) -> int:
    """Run a scaffolding command as the command line does: parsed by the sub-commands
    :func:`add_commands` registers, run by :func:`run`."""
    parser = argparse.ArgumentParser(prog="python -m reconcilekit")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    assert args.command in COMMANDS
    return run(args)


def in_project(project: Path, *command: str | Path,
               **variables: str | None) -> subprocess.CompletedProcess[str]:
    """``command`` run in ``project``, importing (and type-checking against) this checkout's
    reconcilekit; the environment, backend variables included, passed on, with
    ``variables`` set (or unset: None)."""
    env = {name: value for name, value in {
        **os.environ, "PYTHONPATH": str(ROOT), "MYPYPATH": str(ROOT), **variables}.items()
        if value is not None}
    return subprocess.run([str(word) for word in command], cwd=project, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)


def manifests(project: Path) -> list[dict[str, Any]]:
    """Every document of every file the generator wrote (which files is its business)."""
    return [doc for path in sorted((project / "manifests").glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]


def envtest_assets(directory: Path) -> dict[str, str | None]:
    """On a kube-apiserver pass of this suite, the backend variables of envtest's way: a
    ``directory`` holding only what setup-envtest downloads (etcd, kube-apiserver,
    kubectl; no kube-controller-manager) named by ``KUBEBUILDER_ASSETS`` alone. Else
    nothing changed."""
    assets = assets_from_env()
    if backend() != "control-plane" or assets is None:
        return {}
    directory.mkdir()
    for name in ("etcd", "kube-apiserver", "kubectl"):
        if (assets / name).exists():
            (directory / name).symlink_to(assets / name)
    return {"KUBEBUILDER_ASSETS": str(directory), "RECONCILEKIT_TEST_ASSETS": None}


def ruff(project: Path) -> None:
    done = in_project(project, BIN / "ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def documented_tree(page: Path, root: str) -> list[str]:
    """The files of the tree drawn in ``page``'s code block that begins ``root/``, as paths
    under it: an entry ending in ``/`` is a folder, its children indented one step more."""
    text, opening = page.read_text(), f"```\n{root}/\n"
    block = text[text.index(opening) + len(opening):]
    folders: list[str] = []
    files = []
    for line in block[:block.index("```")].splitlines():
        entry = TREE_ENTRY.match(line)
        assert entry, f"{page}: not a tree entry: {line!r}"
        depth, name = len(entry[1]) // 4, entry[2]
        del folders[depth:]
        if name.endswith("/"):
            folders.append(name)
        else:
            files.append("".join(folders) + name)
    return sorted(files)


def test_the_documented_tree_is_every_file_init_writes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "website-operator"
    assert scaffold("init", str(project), "--domain", "example.com",
                    "--group", "web", "--version", "v1", "--kind", "Website") == 0
    capsys.readouterr()
    written = sorted(str(path.relative_to(project)) for path in project.rglob("*")
                     if path.is_file())
    assert documented_tree(DOCUMENTED_TREE, "website-operator") == written


@pytest.mark.timeout(900)
def test_a_generated_project_passes_its_checks_before_and_after_a_second_kind(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "website-operator"
    assert scaffold("init", str(project), "--domain", "example.com",
                    "--group", "web", "--version", "v1", "--kind", "Website") == 0
    out = capsys.readouterr().out
    assert "website_operator/controllers/website.py" in out and "manifests" in out
    assert [doc["metadata"]["name"] for doc in manifests(project)
            if doc["kind"] == "CustomResourceDefinition"] == ["websites.web.example.com"]
    assert os.access(project / ".ci" / "run", os.X_OK)
    ruff(project)

    assert scaffold("create", "kind", "--dir", str(project), "--group", "dns",
                    "--version", "v1alpha1", "--kind", "DNSRecord") == 0
    assert "tests/test_dns_record.py" in capsys.readouterr().out
    docs = manifests(project)
    crds = {doc["metadata"]["name"]: doc for doc in docs
            if doc["kind"] == "CustomResourceDefinition"}
    assert sorted(crds) == ["dnsrecords.dns.example.com", "websites.web.example.com"]
    website = crds["websites.web.example.com"]["spec"]["versions"][0]
    assert website["subresources"] == {"status": {}}
    assert [c["name"] for c in website["additionalPrinterColumns"]] == ["Ready", "Age"]
    [role] = [doc for doc in docs if doc["kind"] == "ClusterRole"]
    granted = {(group, resource) for rule in role["rules"] for group in rule["apiGroups"]
               for resource in rule["resources"]}
    assert {("web.example.com", "websites"), ("web.example.com", "websites/status"),
            ("dns.example.com", "dnsrecords"), ("", "configmaps")} <= granted
    assert 'group = "dns.example.com"' in (project / "PROJECT.toml").read_text()
    registry = (project / "website_operator" / "registry.py").read_text()
    assert "    website.setup,\n    dns_record.setup,\n" in registry

    # the project's CI script: ruff, mypy --strict, the manifests up to date, its tests on
    # the in-process server, and again on this run's real cluster when there is one (its
    # control plane started from envtest's binaries, as the project's CI workflow gets them)
    workflow = yaml.safe_load((project / ".github" / "workflows" / "ci.yml").read_text())
    steps = workflow["jobs"]["check"]["steps"]
    assert "KUBEBUILDER_ASSETS=" in steps[-2]["run"] and steps[-1]["run"] == ".ci/run --install"
    envtest = envtest_assets(tmp_path / "envtest")
    checked = in_project(project, ".ci/run", PYTHON=sys.executable, **envtest)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    runs = ["in-process", *([backend()] if backend() != "in-process" else [])]
    headers = re.findall(r"^reconcilekit backend: (.*)$", checked.stdout, flags=re.M)
    assert len(headers) == len(runs), checked.stdout
    assert all(h.startswith(HEADERS[run]) for h, run in zip(headers, runs, strict=True))
    assert not envtest or headers[-1] == f"{HEADERS['control-plane']} {tmp_path / 'envtest'}"
    assert checked.stdout.count(" 5 passed") == len(runs)  # two tests a kind, the manifests
    usage = in_project(project, sys.executable, "-m", "website_operator", "--help")
    assert usage.returncode == 0 and "--leader-elect" in usage.stdout, usage.stderr
