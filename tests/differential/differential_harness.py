"""Sessions of kubectl steps, run against two API servers and compared step by step.

A session is a YAML file under ``sessions/``: a list of steps, each
``{kubectl: [args...], stdin: <text, optional>}``. :func:`run_session` runs each
step against both servers at once (the two invocations are independent), as
``kubectl --kubeconfig K --namespace NS --cache-dir D <args>`` with ``stdin``
on standard input (``<NS>`` in either stands for the namespace's name), and
compares exit code, stdout and stderr after
:func:`differential_normalize.normalize`. The first step whose normalized
results differ raises :class:`SessionMismatch`, naming the session, the step,
the command and a unified diff of both sides; later steps are not run (they
would build on a divergent state).

A step may carry ``until_exit: N``: it is run again on each server, a tenth of
a second apart, until kubectl exits with N there (within :data:`STEP_TIMEOUT`),
and the last results are compared. That is for what kube-apiserver decides from
an informer's cache (PodSecurity reads a namespace's labels from one): a
server-side dry run repeated until the new label is enforced.

kubectl runs with a fresh ``HOME`` and cache directory per server and session
(so no discovery cache outlives a CRD), ``TZ=UTC`` and ``LC_ALL=C``, and no
``KUBECTL_*`` or proxy variables of the environment.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from differential_normalize import normalize

__all__ = ["SESSIONS", "Result", "Server", "Session", "SessionMismatch", "Step",
           "StepTimeout", "load_sessions", "run_session"]

SESSIONS = Path(__file__).parent / "sessions"
NAMESPACE = "<NS>"
# names kube-apiserver makes itself: a Pod's projected token volume (ServiceAccount admission)
SERVER_GENERATED = ("kube-api-access-",)
STEP_TIMEOUT = 90.0  # a hung kubectl fails the session instead of the whole run


@dataclass(frozen=True)
class Step:
    """One kubectl invocation: its arguments and what goes on its standard input."""

    kubectl: tuple[str, ...]
    stdin: str | None = None
    until_exit: int | None = None

    def command(self) -> str:
        return "kubectl " + shlex.join(self.kubectl)


@dataclass(frozen=True)
class Session:
    """A named list of steps (the file's stem names it)."""

    name: str
    steps: tuple[Step, ...]

    def generate_names(self) -> list[str]:
        """The ``generateName`` prefixes of the session's manifests and the server's own
        (:data:`SERVER_GENERATED`): the names made from them are random."""
        found = list(SERVER_GENERATED)
        for step in self.steps:
            found += re.findall(r"generateName:\s*['\"]?([\w.-]+)", step.stdin or "")
        return found


def _step(raw: Any, where: str) -> Step:
    if not isinstance(raw, dict) or set(raw) - {"kubectl", "stdin", "until_exit"} or (
            "kubectl" not in raw):
        raise ValueError(f"{where}: a step is {{kubectl: [args...], stdin: text, "
                         f"until_exit: code}}, got {raw!r}")
    args = raw["kubectl"]
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args) or not args:
        raise ValueError(f"{where}: kubectl takes a non-empty list of strings, got {args!r}")
    stdin = raw.get("stdin")
    if stdin is not None and not isinstance(stdin, str):
        raise ValueError(f"{where}: stdin is text, got {stdin!r}")
    until = raw.get("until_exit")
    if until is not None and (not isinstance(until, int) or isinstance(until, bool)):
        raise ValueError(f"{where}: until_exit is an exit code, got {until!r}")
    return Step(tuple(args), stdin, until)


def load_sessions(directory: Path = SESSIONS) -> list[Session]:
    """Every session under ``directory``, sorted by name; a malformed file raises."""
    sessions = []
    for path in sorted(directory.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        if not isinstance(raw, list) or not raw:
            raise ValueError(f"{path.name}: a session is a non-empty list of steps")
        sessions.append(Session(path.stem, tuple(
            _step(s, f"{path.name} step {i}") for i, s in enumerate(raw, 1))))
    return sessions


@dataclass(frozen=True)
class Result:
    """What one kubectl invocation gave."""

    code: int
    stdout: str
    stderr: str

    def render(self) -> str:
        return f"exit code: {self.code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}\n"


@dataclass(frozen=True)
class Server:
    """One side of the comparison: a kubeconfig and the namespace the session uses."""

    label: str
    kubeconfig: Path
    namespace: str
    home: Path


class SessionMismatch(AssertionError):
    """A step whose normalized results differ between the two servers (``step`` from 1)."""

    def __init__(self, message: str, step: int) -> None:
        super().__init__(message)
        self.step = step


class StepTimeout(AssertionError):
    """A kubectl invocation that did not end within :data:`STEP_TIMEOUT` (not a mismatch)."""


async def run_step(kubectl: str, server: Server, step: Step) -> Result:
    """Run ``step`` against ``server``, again until it exits ``until_exit`` if it says so
    (:class:`StepTimeout` if that takes longer than STEP_TIMEOUT)."""
    if step.until_exit is None:
        return await run_kubectl(kubectl, server, step)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STEP_TIMEOUT
    while True:
        result = await run_kubectl(kubectl, server, step)
        if result.code == step.until_exit:
            return result
        if loop.time() > deadline:
            raise StepTimeout(f"{step.command()} against {server.label} did not exit "
                              f"{step.until_exit} within {STEP_TIMEOUT:g}s (last: "
                              f"{result.code}, {result.stderr.strip()!r})")
        await asyncio.sleep(0.1)


async def run_kubectl(kubectl: str, server: Server, step: Step) -> Result:
    """Run ``step`` against ``server``; kubectl's own exit ends it (or STEP_TIMEOUT fails)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KUBECTL_") and k.lower() not in
           {"kubeconfig", "http_proxy", "https_proxy", "no_proxy", "all_proxy"}}
    env.update(HOME=str(server.home), TZ="UTC", LC_ALL="C", LANG="C")
    proc = await asyncio.create_subprocess_exec(
        kubectl, "--kubeconfig", str(server.kubeconfig), "--namespace", server.namespace,
        "--cache-dir", str(server.home / "cache"),
        *(arg.replace(NAMESPACE, server.namespace) for arg in step.kubectl),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        out, err = await asyncio.wait_for(
            proc.communicate((step.stdin or "").replace(NAMESPACE, server.namespace).encode()),
            STEP_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise StepTimeout(f"{step.command()} against {server.label} did not end within "
                          f"{STEP_TIMEOUT:g}s") from None
    assert proc.returncode is not None
    return Result(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


def _normalized(result: Result, namespace: str, generated: Sequence[str]) -> Result:
    return Result(result.code, normalize(result.stdout, namespace, generated),
                  normalize(result.stderr, namespace, generated))


async def run_session(kubectl: str, session: Session, reference: Server,
                      candidate: Server) -> int:
    """Run every step on both servers; raise :class:`SessionMismatch` at the first
    difference. ``reference`` is kube-apiserver (the judge). Returns the steps run."""
    generated = session.generate_names()
    for number, step in enumerate(session.steps, 1):
        got = await asyncio.gather(run_step(kubectl, reference, step),
                                   run_step(kubectl, candidate, step))
        ref, cand = (_normalized(r, s.namespace, generated)
                     for r, s in zip(got, (reference, candidate), strict=True))
        if ref != cand:
            diff = "".join(difflib.unified_diff(
                ref.render().splitlines(keepends=True), cand.render().splitlines(keepends=True),
                fromfile=reference.label, tofile=candidate.label))
            stdin = f"\nstdin:\n{step.stdin}" if step.stdin else ""
            raise SessionMismatch(
                f"session {session.name}, step {number} of {len(session.steps)}: "
                f"{step.command()}{stdin}\nnormalized results differ "
                f"(- {reference.label}, + {candidate.label}):\n{diff}", number)
    return len(session.steps)
