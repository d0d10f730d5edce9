"""CPU time and memory of a live process (another than the benchmark's), read from /proc."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cpu_and_peak_rss", "cpu_and_rss", "cpu_seconds"]


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command's name (the state first)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _cpu(fields: list[str]) -> float:
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user and system) the process has used so far."""
    return _cpu(_stat(pid))


def cpu_and_rss(pid: int) -> tuple[float, float]:
    """(CPU seconds, RSS in MiB) of the process now."""
    fields = _stat(pid)
    return _cpu(fields), int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def cpu_and_peak_rss(pid: int) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MiB: VmHWM) of the process so far."""
    hwm = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text()
               .splitlines() if line.startswith("VmHWM"))
    return cpu_seconds(pid), hwm / 1024
