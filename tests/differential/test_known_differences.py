"""The known differences, the xfail marks and docs/testing.md say the same thing."""

from __future__ import annotations

import re
from pathlib import Path

from differential_harness import load_sessions
from known_differences import NOT_YET_MATCHED
from python_client_sessions import SESSIONS as PYTHON_SESSIONS

DOC = Path(__file__).parents[2] / "docs" / "testing.md"
SECTION = "## Differential testing against kube-apiserver"


def _documented(heading: str) -> list[tuple[str, int]]:
    """(session, step) of each row of the table under ``heading`` in the section."""
    text = DOC.read_text()
    assert SECTION in text, f"docs/testing.md has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    assert heading in section, f"the section has no {heading!r}"
    part = section.split(heading, 1)[1].split("\n### ", 1)[0]
    return [(name, int(step)) for name, step in
            re.findall(r"^\| `([\w-]+)` \| (\d+) \|", part, flags=re.M)]


def test_every_not_yet_matched_session_exists() -> None:
    """No known difference outlives its session file."""
    names = {s.name for s in load_sessions()} | set(PYTHON_SESSIONS)
    assert sorted(set(NOT_YET_MATCHED) - names) == []


def test_the_docs_list_exactly_the_sessions_marked_xfail() -> None:
    """The "Not yet matched" table names each xfail-marked session once, at its step."""
    documented = _documented("### Not yet matched")
    assert len(documented) == len(set(documented)), "a session listed twice"
    assert sorted(documented) == sorted((name, known.step)
                                        for name, known in NOT_YET_MATCHED.items())
