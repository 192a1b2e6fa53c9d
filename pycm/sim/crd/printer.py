"""A custom resource's table (``kubectl get``): its version's ``additionalPrinterColumns``.

As apiextensions-apiserver's table convertor: the columns are ``Name`` and then each printer
column (name, type, format, description, priority as declared); with none declared, one
``Age`` column (``date`` of ``.metadata.creationTimestamp``). A cell is the first value the
column's JSONPath reaches (``None`` when it reaches nothing, which kubectl prints as
``<none>``); a ``date`` column prints the time since that timestamp as kube's HumanDuration; a
list or object value is printed as its JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from pycm.sim.crd.jsonpath import JSONPath, JSONPathError, parse_json_path
from pycm.sim.objects import Obj, parse_rfc3339
from pycm.sim.tables import human_duration

__all__ = ["Column", "printer_columns"]

Column = dict[str, Any]
_AGE = {
    "name": "Age",
    "type": "date",
    "jsonPath": ".metadata.creationTimestamp",
    "description": "",
    "priority": 0,
}
_NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)


def _cell(path: JSONPath | None, ctype: str, obj: Obj, now: float) -> Any:
    if path is None:
        return None
    found, value = path.first(obj)
    if not found or value is None:
        return None
    if ctype == "date" and isinstance(value, str):
        try:
            return human_duration(max(0.0, now - parse_rfc3339(value)))
        except ValueError:
            return value
    if isinstance(value, dict | list):
        return orjson.dumps(value).decode()
    return value


def printer_columns(
    version: Mapping[str, Any],
) -> tuple[list[Column], Callable[[Obj, float], list[Any]]]:
    """The column definitions and the row function for one CRD version."""
    declared = [c for c in version.get("additionalPrinterColumns") or [] if isinstance(c, Mapping)]
    columns = declared or [_AGE]
    defs: list[Column] = [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": _NAME_DESCRIPTION,
            "priority": 0,
        }
    ]
    paths: list[tuple[JSONPath | None, str]] = []
    for column in columns:
        defs.append(
            {
                "name": str(column.get("name") or ""),
                "type": str(column.get("type") or "string"),
                "format": str(column.get("format") or ""),
                "description": str(column.get("description") or ""),
                "priority": int(column.get("priority") or 0),
            }
        )
        try:
            path: JSONPath | None = parse_json_path(str(column.get("jsonPath") or ""))
        except JSONPathError:
            path = None  # refused when the CRD was written; never here
        paths.append((path, str(column.get("type") or "string")))

    def cells(obj: Obj, now: float) -> list[Any]:
        name = (obj.get("metadata") or {}).get("name", "")
        return [name, *(_cell(path, ctype, obj, now) for path, ctype in paths)]

    return defs, cells
