"""``OperatorProcess``: an operator run as a child process, its output read line by line.

A benchmark or a test that runs an operator as a process of its own (so that its CPU
time, its memory and its crashes are its own, and a SIGKILL is a real one) starts it,
waits for a line of its log or for its exit, signals it, and on failure wants its last
lines in the error. This is that supervisor, for any command (an operator, a test
server, a small script): one process per object; what restarts a process when it exits
(as a kubelet restarts a container) is up to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import anyio

__all__ = ["OperatorProcess"]

_LINE_LIMIT = 2**24  # bytes: a longer line is dropped (the read goes on with the next)


class OperatorProcess:
    """``command`` as a child process, its standard output and standard error read as
    they come.

    Use as ``async with OperatorProcess(sys.executable, "-m", "my_operator", ...) as
    operator:`` (or :meth:`start` ... :meth:`stop`), on asyncio (anyio's asyncio backend).
    ``env`` is the whole environment of the process (default: this process's); standard
    input is ``/dev/null``.
    Every line the process writes on either stream (decoded as UTF-8, undecodable bytes
    replaced, without its line ending) is appended to :attr:`lines` in the order read,
    and those of standard output to :attr:`stdout` too (what a command prints as its
    result, apart from its log). With ``log``, every line is also appended to that file
    and flushed at once, so the file can be read while the process runs; processes may
    append to one log in turn, as the restarts of a container do. ``name`` is what
    errors call the process (default: the command).

    Waits are event-driven and bounded: :meth:`wait_for_line` returns as soon as a
    matching line is read (or at once if one was), :meth:`wait` once the process has
    exited and its output is read to the end. A wait that does not get what it waits
    for (its deadline passes, or the process exits first) raises an ``AssertionError``
    naming the process and what was awaited, with its last lines (:meth:`log_tail`).

    :meth:`stop` (and leaving the ``async with`` block) SIGTERMs the process (once),
    SIGKILLs it if it has not exited ``grace`` seconds later, and reaps it; :meth:`kill`
    SIGKILLs it at once (no shutdown, no cleanup: a crash). A process is never left
    behind unreaped by :meth:`stop`.
    """

    def __init__(self, *command: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None,
                 env: Mapping[str, str] | None = None, log: Path | None = None,
                 name: str | None = None) -> None:
        if not command:
            raise ValueError("OperatorProcess needs a command")
        self.command = tuple(os.fspath(part) for part in command)
        self.name = name or shlex.join(self.command)
        self.lines: list[str] = []
        self.stdout: list[str] = []
        self._cwd, self._env, self._log_path = cwd, env, log
        self._log: BinaryIO | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._readers: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()
        self._terminated = False

    async def __aenter__(self) -> OperatorProcess:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

    async def start(self) -> OperatorProcess:
        """Start the process (once); returns ``self``."""
        if self._process is not None:
            raise RuntimeError(f"{self.name} was started already")
        if self._log_path is not None:
            self._log = self._log_path.open("ab")
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.command, cwd=self._cwd, env=self._env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, limit=_LINE_LIMIT)
        except BaseException:
            self._close_log()
            raise
        assert self._process.stdout is not None and self._process.stderr is not None
        self._readers = [asyncio.ensure_future(self._read(self._process.stdout, True)),
                         asyncio.ensure_future(self._read(self._process.stderr, False))]
        return self

    @property
    def pid(self) -> int:
        """The process id (its /proc entry lives until the process is reaped)."""
        return self._started().pid

    @property
    def returncode(self) -> int | None:
        """The exit code once the process has been reaped (negative: the signal that
        ended it), else None."""
        return self._started().returncode

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the process's output, one string."""
        return "\n".join(self.lines[-lines:])

    async def wait_for_line(self, pattern: str | re.Pattern[str], *, within: float,
                            since: int = 0) -> re.Match[str]:
        """The match of ``pattern`` (``re.search``) in the first line from
        ``lines[since]`` on that it matches, read already or as soon as it is read."""
        regex = re.compile(pattern)
        what = f"a line matching {regex.pattern!r}"
        at = since
        with anyio.move_on_after(within):
            while True:
                for line in self.lines[at:]:
                    if found := regex.search(line):
                        return found
                at = max(at, len(self.lines))
                if all(reader.done() for reader in self._readers):
                    code = await self._started().wait()
                    raise AssertionError(self._failure(f"exited with code {code} before {what}"))
                changed = self._changed
                await changed.wait()
        raise AssertionError(self._failure(f"{what} not read within {within:g}s"))

    async def wait(self, *, within: float = math.inf) -> int:
        """The exit code, once the process has exited and its output is read to the end
        (no bound by default: the caller's cancel scope may end the wait)."""
        process = self._started()
        with anyio.move_on_after(within):
            code = await process.wait()
            await asyncio.wait(self._readers)  # (cancelled, it leaves them reading)
            self._close_log()
            return code
        raise AssertionError(self._failure(f"did not exit within {within:g}s"))

    def terminate(self) -> None:
        """SIGTERM the process, unless it has exited or been SIGTERMed already."""
        process = self._started()
        if process.returncode is None and not self._terminated:
            self._terminated = True
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL the process now, unless it has exited (:meth:`wait` reaps it)."""
        process = self._started()
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()

    async def stop(self, grace: float = 30.0) -> int:
        """:meth:`terminate`, :meth:`kill` if the process has not exited ``grace`` seconds
        later, and :meth:`wait`; the exit code. Does nothing to a process that has exited
        but reap it. Call it shielded from cancellation when the caller may be cancelled
        (``with anyio.CancelScope(shield=True):``)."""
        process = self._started()
        self.terminate()
        with anyio.move_on_after(grace):
            await process.wait()
        self.kill()
        code = await process.wait()
        with anyio.move_on_after(grace):  # output read to the end, unless a child holds it
            await asyncio.wait(self._readers)
        for reader in self._readers:
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
        self._close_log()
        return code

    def _started(self) -> asyncio.subprocess.Process:
        if self._process is None:
            raise RuntimeError(f"{self.name} is not started")
        return self._process

    def _failure(self, what: str) -> str:
        return f"{self.name}: {what}; the last lines of its output:\n{self.log_tail()}"

    async def _read(self, stream: asyncio.StreamReader, stdout: bool) -> None:
        try:
            while True:
                try:
                    raw = await stream.readline()
                except ValueError:  # longer than _LINE_LIMIT: dropped
                    continue
                if not raw:
                    return
                line = raw.decode(errors="replace").rstrip("\r\n")
                self.lines.append(line)
                if stdout:
                    self.stdout.append(line)
                if self._log is not None:
                    self._log.write(raw if raw.endswith(b"\n") else raw + b"\n")
                    self._log.flush()
                self._notify()
        finally:
            self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
