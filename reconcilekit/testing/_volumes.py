"""``write_volume``: files replaced in a directory as the kubelet replaces a mounted volume.

A Secret, ConfigMap or projected service-account token volume is updated by
the kubelet's atomic writer: the new files go into a fresh hidden directory,
the ``..data`` symlink is swapped to it by a rename, and each visible name is
a symlink into ``..data``. A reader never sees half the files of an update;
one that keeps a file open keeps the old content. Code that watches such
files (a serving certificate, a rotated token) is tested against exactly that.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path

__all__ = ["write_volume"]


def write_volume(directory: str | Path, files: Mapping[str, str | bytes]) -> dict[str, Path]:
    """Replace the content of ``directory`` with ``files`` as the kubelet does (see above).

    ``files`` maps a plain file name to its content. Returns each name's visible path
    (the symlink readers open). The previous data directory is removed after the swap,
    as the kubelet removes it; a name not in ``files`` keeps its link, now dangling.
    """
    volume = Path(directory)
    for name in files:
        if not name or "/" in name or name.startswith(".."):
            raise ValueError(f"{name!r} is not a plain file name for a volume")
    data = volume / "..data"
    previous = volume / os.readlink(data) if data.is_symlink() else None
    fresh = volume / f"..{secrets.token_hex(6)}"
    fresh.mkdir()
    for name, content in files.items():
        path = fresh / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    swap = volume / "..data_tmp"
    swap.unlink(missing_ok=True)
    swap.symlink_to(fresh.name)
    os.replace(swap, data)
    visible = {}
    for name in files:
        link = volume / name
        if not link.is_symlink():
            link.symlink_to(f"..data/{name}")
        visible[name] = link
    if previous is not None and previous != fresh:
        shutil.rmtree(previous, ignore_errors=True)
    return visible
