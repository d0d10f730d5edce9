"""Each session of ``python_client_sessions`` against kube-apiserver and the in-process server.

The official ``kubernetes`` Python client (its own configuration loader, its
urllib3 transport, its serialization) runs each session once against each
server, in a worker thread; the records of the two runs are compared step by
step after :func:`differential_normalize.normalize`. Known differences are
strict xfails pinned to their first differing step, as for the kubectl
sessions (:data:`known_differences.NOT_YET_MATCHED`).
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable
from pathlib import Path

import anyio.to_thread
import pytest
from differential_harness import SessionMismatch
from differential_normalize import normalize
from known_differences import NOT_YET_MATCHED
from kubernetes import config as kube_config
from python_client_sessions import SESSIONS, Steps

from reconcilekit.testing import Cluster


def _params() -> list[object]:
    return [pytest.param(name, id=name, marks=[pytest.mark.xfail(
        strict=True, raises=SessionMismatch,
        reason=f"step {NOT_YET_MATCHED[name].step}: {NOT_YET_MATCHED[name].reason}")]
        if name in NOT_YET_MATCHED else []) for name in SESSIONS]


def _run(kubeconfig: Path, session: Callable[[Steps, str], None],
         namespace: str) -> list[tuple[str, str]]:
    api = kube_config.new_client_from_config(config_file=str(kubeconfig))
    try:
        steps = Steps(api)
        try:
            session(steps, namespace)
        except Exception as err:  # a step's result missing: the records say why
            steps.records.append(("session stopped", f"{type(err).__name__}: {err}"))
        return steps.records
    finally:
        api.close()


@pytest.mark.parametrize("name", _params())
async def test_python_client_session(name: str, kubectl: str, in_process_kubeconfig: Path,
                                     apiserver: Cluster, in_process_twin: Cluster) -> None:
    """Each call's result, or its error's status, reason and message, is the same once
    normalized. (``kubectl`` only gates the test to the kube pass; ``in_process_twin``
    makes the namespace.)"""
    assert apiserver.kubeconfig_path is not None, "a real backend has a kubeconfig"
    session, ns = SESSIONS[name], apiserver.namespace
    reference = await anyio.to_thread.run_sync(_run, apiserver.kubeconfig_path, session, ns)
    candidate = await anyio.to_thread.run_sync(_run, in_process_kubeconfig, session, ns)
    gone = ("(no such step)", "")
    for number, ((label, ref), (_, cand)) in enumerate(
            itertools.zip_longest(reference, candidate, fillvalue=gone), 1):
        ref, cand = normalize(ref, ns), normalize(cand, ns)
        if ref != cand:
            diff = "".join(difflib.unified_diff(
                ref.splitlines(keepends=True), cand.splitlines(keepends=True),
                fromfile="kube-apiserver", tofile="in-process"))
            mismatch = SessionMismatch(
                f"python client session {name}, step {number} of {len(reference)} ({label}): "
                f"normalized results differ:\n{diff}", number)
            known = NOT_YET_MATCHED.get(name)
            if known is not None and number != known.step:
                raise AssertionError(f"known to differ first at step {known.step} "
                                     f"({known.reason}), but:\n{mismatch}")
            raise mismatch
