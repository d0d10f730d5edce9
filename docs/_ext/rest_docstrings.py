"""Griffe extension for the API reference: reconcilekit's docstrings in Markdown.

reconcilekit's docstrings are prose with a few reStructuredText habits:
``:class:`X``` roles, ``Title::`` before a literal block, ``\\ `` escapes,
and bullet lists right under a sentence. mkdocstrings renders Markdown,
so before the docstrings are parsed this extension

* turns every role into a cross-reference when its target is part of the
  rendered public API (``[`Client`][reconcilekit.Client]``), else into plain
  code, so the strict build never meets an unresolved reference;
* turns ``Title::`` into ``Title:`` (the indented block after it is already a
  Markdown code block) and drops ``\\ `` escapes;
* puts a blank line before a list that follows a sentence, which
  Python-Markdown needs to see a list;
* keeps a Google section title (``Attributes:``) followed by a bullet list
  as prose: those lists are descriptions, not ``name (type): text`` entries.

It changes what is rendered, never the source.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|meth|func|mod|attr|data|exc|obj):`([^`]+)`")
_BULLET = re.compile(r"^\s*(?:[*-]|\d+\.)\s")
_SECTION = re.compile(r"^\s*\w[\w ]*:\s*$")
_GOOGLE = re.compile(
    r"^(\s*)(Args|Arguments|Params|Parameters|Attributes|Returns|Yields|Raises|"
    r"Exceptions|Warns|Receives|Other Parameters):\s*$")


class RestDocstrings(griffe.Extension):
    """Rewrite reconcilekit's docstrings for mkdocstrings (see the module docstring)."""

    def __init__(self) -> None:
        self._public: dict[str, str] = {}  # defining path -> documented path
        self._anchors: set[str] = set()

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader,
                   **kwargs: Any) -> None:
        if pkg.path != "reconcilekit":
            return
        self._index(pkg)
        testing = pkg.members.get("testing")
        if isinstance(testing, griffe.Module):
            self._index(testing)
        self._rewrite(pkg)

    # -- what the reference renders ---------------------------------------------------

    def _index(self, module: griffe.Module) -> None:
        for name in module.exports or ():
            if not isinstance(name, str) or name not in module.members:
                continue
            member = module.members[name]
            public = f"{module.path}.{name}"
            target = member.target_path if isinstance(member, griffe.Alias) else member.path
            self._public[target] = public
            self._anchors.add(public)
            obj = member.final_target if isinstance(member, griffe.Alias) else member
            if isinstance(obj, griffe.Class):
                for child_name, child in obj.members.items():
                    if not child_name.startswith("_") and child.docstring is not None:
                        self._anchors.add(f"{public}.{child_name}")

    def _documented(self, path: str) -> str | None:
        """The rendered anchor for ``path`` (defining or public), if there is one."""
        if path in self._anchors:
            return path
        parts = path.split(".")
        for cut in range(len(parts), 0, -1):
            public = self._public.get(".".join(parts[:cut]))
            if public is not None:
                candidate = ".".join([public, *parts[cut:]])
                return candidate if candidate in self._anchors else None
        return None

    # -- rewriting --------------------------------------------------------------------

    def _rewrite(self, obj: griffe.Object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = self._markdown(obj, obj.docstring.value)
        for member in obj.members.values():
            if not isinstance(member, griffe.Alias):
                self._rewrite(member)

    def _markdown(self, obj: griffe.Object, text: str) -> str:
        text = _ROLE.sub(lambda m: self._reference(obj, m.group(1)), text)
        text = text.replace("\\ ", "")
        lines: list[str] = []
        in_list = False
        raw = text.splitlines()
        for i, line in enumerate(raw):
            google = _GOOGLE.match(line)
            following = next((nxt for nxt in raw[i + 1:] if nxt.strip()), "")
            if google and _BULLET.match(following):
                line = f"{google.group(1)}**{google.group(2)}:**"
            if line.rstrip().endswith("::"):
                line = line.rstrip()[:-1]
            if _BULLET.match(line):
                previous = lines[-1] if lines else ""
                if previous.strip() and not in_list and not _SECTION.match(previous):
                    lines.append("")
                in_list = True
            elif not line.strip():
                in_list = False
            lines.append(line)
        return "\n".join(lines)

    def _reference(self, obj: griffe.Object, target: str) -> str:
        short = target.startswith("~")
        path = target.lstrip("~")
        text = path.rsplit(".", 1)[-1] if short else path
        owner = obj if obj.is_class else obj.parent
        candidates = [path]
        if owner is not None and owner.is_class:
            candidates.append(f"{owner.path}.{path}")
        if obj.module is not None:
            candidates.append(f"{obj.module.path}.{path}")
        candidates += [f"reconcilekit.{path}", f"reconcilekit.testing.{path}"]
        for candidate in candidates:
            anchor = self._documented(candidate)
            if anchor is not None:
                return f"[`{text}`][{anchor}]"
        return f"`{text}`"
