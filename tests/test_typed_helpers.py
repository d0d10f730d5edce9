"""The helpers keep a typed kind typed: ``mypy --strict`` on ``typed_kinds/helpers_typed.py``
reports exactly the errors its ``# E:`` comments expect (a misspelled field, a callback
for another kind) and nothing on the lines that use every helper with no cast."""

from __future__ import annotations

import re
from pathlib import Path

from mypy import api

CHECKED = Path(__file__).parent / "typed_kinds" / "helpers_typed.py"
EXPECTED = re.compile(r"#\s*E:\s*(.+)$")
REPORTED = re.compile(r"^[^:]+:(\d+): error: (.*)$")


def test_the_helpers_keep_typed_kinds_typed_and_refuse_the_wrong_kind() -> None:
    expected = {number: match.group(1).strip()
                for number, line in enumerate(CHECKED.read_text().splitlines(), start=1)
                if (match := EXPECTED.search(line))}
    out, err, _ = api.run(["--strict", "--no-error-summary", "--hide-error-context",
                           str(CHECKED)])
    assert not err, err
    reported: dict[int, list[str]] = {}
    for line in out.splitlines():
        if match := REPORTED.match(line):
            reported.setdefault(int(match.group(1)), []).append(match.group(2))
    unexpected = {n: m for n, m in reported.items() if n not in expected}
    assert not unexpected, f"errors on lines that should type-check: {unexpected}"
    assert len(expected) >= 7  # the checks below are not vacuous
    for number, text in expected.items():
        assert any(text in message for message in reported.get(number, ())), (
            f"line {number}: expected an error containing {text!r}, got "
            f"{reported.get(number)}")
