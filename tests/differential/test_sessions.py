"""Each session of ``sessions/`` against kube-apiserver and the in-process server.

The real server is the ``apiserver`` fixture (the test's own namespace); the
in-process one is the pytest session's (see conftest), in a namespace of the
same name created for the test. Both get the corpus's CRDs first. A session
that differs fails with the step and a diff, unless it is listed in
:data:`known_differences.NOT_YET_MATCHED`: then it must fail (strict xfail), at
the step listed (a first difference elsewhere is :class:`MovedDifference`, a
plain failure).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from differential_harness import Server, Session, SessionMismatch, load_sessions, run_session
from known_differences import NOT_YET_MATCHED

from reconcilekit.testing import Cluster

CRDS = sorted((Path(__file__).parent / "crds").glob("*.yaml"))


class MovedDifference(AssertionError):
    """A known-different session whose first difference is not at the step listed."""


def _params() -> list[object]:
    return [pytest.param(s, id=s.name, marks=[pytest.mark.xfail(
        strict=True, raises=SessionMismatch,
        reason=f"step {NOT_YET_MATCHED[s.name].step}: {NOT_YET_MATCHED[s.name].reason}")]
        if s.name in NOT_YET_MATCHED else []) for s in load_sessions()]


@pytest.mark.parametrize("session", _params())
async def test_session(session: Session, kubectl: str, in_process_kubeconfig: Path,
                       apiserver: Cluster, in_process_twin: Cluster) -> None:
    """kubectl's exit code, stdout and stderr match at every step, once normalized."""
    assert apiserver.kubeconfig_path is not None, "a real backend has a kubeconfig"
    for crd in CRDS:
        await apiserver.install_crd(crd)
        await in_process_twin.install_crd(crd)
    with tempfile.TemporaryDirectory(prefix="differential-") as home:
        reference = Server("kube-apiserver", apiserver.kubeconfig_path,
                           apiserver.namespace, Path(home, "kube"))
        candidate = Server("in-process", in_process_kubeconfig,
                           apiserver.namespace, Path(home, "in-process"))
        try:
            await run_session(kubectl, session, reference, candidate)
        except SessionMismatch as mismatch:
            known = NOT_YET_MATCHED.get(session.name)
            if known is not None and mismatch.step != known.step:
                raise MovedDifference(
                    f"known to differ first at step {known.step} ({known.reason}), "
                    f"but:\n{mismatch}") from None
            raise
