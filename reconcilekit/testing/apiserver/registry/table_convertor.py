"""A kind's TableConvertor: the columns ``kubectl get`` shows and each object's cells.

kube-apiserver answers ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``
with a ``meta.k8s.io/v1`` Table whose columns the server chose. Three
convertors exist, as in kube-apiserver:

- :func:`default_table` (``rest.NewDefaultTableConvertor``): Name and
  Created At, for a built-in kind without a printer and for CRDs;
- :func:`printer_columns` (apiextensions' convertor): a custom resource's
  ``additionalPrinterColumns`` (Age when it declares none), each cell the
  first value the column's ``jsonPath`` finds (client-go's JSONPath,
  :mod:`..machinery.jsonpath`);
- :func:`builtin_printer`: a built-in kind's printer
  (``pkg/printers/internalversion``). Its column definitions are not written
  here: they are read from ``data/kube-apiserver-1.28-table-columns.json.gz``,
  captured from kube-apiserver by ``tools/capture_table_columns.py``. The
  kind's strategy gives the cells, one per captured column, in order.

Ages are Go's ``duration.HumanDuration`` of the server's clock
(:func:`human_duration`).
"""

from __future__ import annotations

import datetime
import functools
import gzip
import importlib.resources
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..machinery.jsonpath import PathError, find, go_text
from ..machinery.resources import ResourceType
from ..machinery.unstructured import epoch_seconds

__all__ = ["COLUMNS_FILE", "Cells", "TableConvertor", "age",
           "builtin_printer", "captured_columns", "default_table", "human_duration",
           "printer_columns"]

COLUMNS_FILE = "kube-apiserver-1.28-table-columns.json.gz"

Obj = Mapping[str, Any]
# A printer: the cells of an object's row, given the server's time (epoch seconds).
Cells = Callable[[Obj, float], list[Any]]


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: Any, now: float) -> str:
    """The printers' ``translateTimestamp``: how long ago ``timestamp`` (RFC 3339) was,
    ``<unknown>`` for none."""
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    return human_duration(now - epoch_seconds(timestamp))


@dataclass(frozen=True, slots=True)
class TableConvertor:
    """The column definitions of a kind's Table and the printer of its rows.

    Invariant: :attr:`cells` gives one cell per column definition.
    """

    columns: tuple[Mapping[str, Any], ...]
    cells: Cells

    def definitions(self) -> list[dict[str, Any]]:
        return [dict(c) for c in self.columns]


@functools.cache
def _captured() -> Mapping[str, tuple[Mapping[str, Any], ...]]:
    package = (__package__ or "").rpartition(".")[0]  # reconcilekit.testing.apiserver
    data = json.loads(gzip.decompress((importlib.resources.files(package) / "data"
                                       / COLUMNS_FILE).read_bytes()))
    return {key: tuple(defs) for key, defs in data["columns"].items()}


def captured_columns(group: str, plural: str) -> tuple[Mapping[str, Any], ...] | None:
    """kube-apiserver's column definitions for a built-in resource (None: not captured)."""
    return _captured().get(f"{plural}.{group}" if group else plural)


def _default_cells(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp")]


@functools.cache
def default_table() -> TableConvertor:
    """``rest.NewDefaultTableConvertor``: Name and Created At (their descriptions as
    kube-apiserver gives them, from the capture)."""
    described = {c["name"]: c["description"] for c in captured_columns("", "namespaces") or ()}
    return TableConvertor((
        {"name": "Name", "type": "string", "format": "name", "description": described["Name"],
         "priority": 0},
        {"name": "Created At", "type": "date", "format": "", "description": described["Age"],
         "priority": 0}), _default_cells)


def builtin_printer(rtype: ResourceType, cells: Cells) -> TableConvertor:
    """The convertor of a built-in kind printed by ``cells`` (under the captured columns)."""
    columns = captured_columns(rtype.resource.group, rtype.resource.plural)
    if columns is None:
        raise LookupError(f"no Table columns were captured for {rtype.resource.plural}"
                          f".{rtype.resource.group}")
    return TableConvertor(columns, cells)


def _cell(kind: str, value: Any, now: float) -> Any:
    """apiextensions' ``cellForJSONValue``: the value if it is of the column's type."""
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        try:
            when = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z").timestamp()
        except ValueError:
            return "<invalid>"
        return human_duration(now - when)
    return None


def _printer_cell(spec: Mapping[str, Any]) -> Callable[[Obj, float], Any]:
    """A declared column's cell: the first value its ``jsonPath`` finds (none when there is
    none or client-go's JSONPath fails), printed as a ``string`` column's
    ``PrintResults`` does, or kept if it is of the column's type."""
    kind, path = str(spec.get("type", "string")), str(spec.get("jsonPath", ""))

    def cell(obj: Obj, now: float) -> Any:
        try:
            found = find(obj, path)
        except PathError:
            return None
        if not found:
            return None
        return go_text(found[0]) if kind == "string" else _cell(kind, found[0], now)
    return cell


def printer_columns(declared: Sequence[Mapping[str, Any]]) -> TableConvertor:
    """The convertor of a custom resource version with these ``additionalPrinterColumns``
    (an empty sequence: the Age column kube-apiserver gives one that declares none)."""
    declared = declared or ({"name": "Age", "type": "date",
                             "jsonPath": ".metadata.creationTimestamp",
                             "description": default_table().columns[1]["description"]},)
    printers = [_printer_cell(c) for c in declared]

    def cells(obj: Obj, now: float) -> list[Any]:
        return [obj["metadata"]["name"], *(p(obj, now) for p in printers)]
    return TableConvertor((default_table().columns[0], *(
        {"name": str(c.get("name", "")), "type": str(c.get("type", "string")),
         "format": str(c.get("format", "")), "description": str(c.get("description", "")),
         "priority": int(c.get("priority", 0) or 0)} for c in declared)), cells)
