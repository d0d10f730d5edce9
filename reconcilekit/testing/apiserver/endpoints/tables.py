"""Server-side printing: the ``meta.k8s.io/v1`` Table of a get or a list.

kubectl asks for ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``
and prints the columns the server chose: the kind's strategy gives its
TableConvertor (:mod:`..registry.table_convertor`), and this module lays
out the answer. Each row carries the object's metadata as a
PartialObjectMetadata, as kube-apiserver's default
``includeObject=Metadata`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..registry.table_convertor import TableConvertor

__all__ = ["table"]


def _metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"]}


def table(convertor: TableConvertor, objects: Iterable[Mapping[str, Any]],
          list_meta: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The Table kube-apiserver answers a list (or a get, with one row) with."""
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": dict(list_meta),
            "columnDefinitions": convertor.definitions(),
            "rows": [{"cells": convertor.cells(o, now), "object": _metadata(o)}
                     for o in objects]}
