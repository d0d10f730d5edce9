"""``write_volume``: a directory updated as the kubelet updates a mounted volume."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reconcilekit.testing import write_volume


def test_an_update_swaps_every_file_at_once_and_removes_the_old_data(tmp_path: Path) -> None:
    first = write_volume(tmp_path, {"tls.crt": b"cert-1", "tls.key": "key-1"})
    old_data = tmp_path / os.readlink(tmp_path / "..data")
    held = first["tls.crt"].open("rb")  # a reader that keeps the old file open
    second = write_volume(tmp_path, {"tls.crt": b"cert-2", "tls.key": "key-2"})
    assert second == first  # the same visible names: symlinks into ..data
    assert second["tls.crt"].read_bytes() == b"cert-2"
    assert second["tls.key"].read_text() == "key-2"
    assert held.read() == b"cert-1"
    held.close()
    assert not old_data.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("..")) == [
        "tls.crt", "tls.key"]


@pytest.mark.parametrize("name", ["", "a/b", "..data", "../x"])
def test_a_name_that_is_not_a_plain_file_name_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="not a plain file name"):
        write_volume(tmp_path, {name: "x"})
