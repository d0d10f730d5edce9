"""The templates of a generated project, and filling them in.

The templates are files of the package (``templates/``, shipped with it as
package data), read through :mod:`importlib.resources` when a command first
renders one, never at import. They are :class:`string.Template` texts:
``$name`` or ``${name}`` is a value, ``$$`` a dollar sign.

Guarantee: a template naming a value that is not given, or holding a ``$``
that is neither, raises (KeyError, ValueError) rather than writing a file
with a hole in it; the tests render every template.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from string import Template

__all__ = ["render", "template_names"]

_PACKAGE = __name__.rpartition(".")[0]


@cache
def _template(name: str) -> Template:
    return Template((files(_PACKAGE) / "templates" / name).read_text(encoding="utf-8"))


def render(name: str, values: Mapping[str, str]) -> str:
    """The template ``name`` (a file name in ``templates/``) filled in with ``values``."""
    return _template(name).substitute(values)


def template_names() -> list[str]:
    """Every template, by file name."""
    return sorted(entry.name for entry in (files(_PACKAGE) / "templates").iterdir()
                  if entry.name.endswith(".tmpl"))
