"""The sessions whose results differ today, each with the difference found.

``NOT_YET_MATCHED`` maps a session's name to its first differing step and what
the in-process server does differently from kube-apiserver there;
:mod:`test_sessions` marks those sessions ``xfail(strict=True)`` for a
mismatch at that step only, so a session that starts matching fails until its
entry goes, and one whose first difference moves to another step fails too.
docs/testing.md lists the same names ("Differential testing against
kube-apiserver"), which ``test_known_differences`` checks.
"""

from __future__ import annotations

from typing import NamedTuple


class Known(NamedTuple):
    """A known difference: the session's first differing step (from 1) and what differs."""

    step: int
    reason: str


NOT_YET_MATCHED: dict[str, Known] = {}
