"""Defaulting a custom resource from its structural schema's ``default:`` values.

kube-apiserver applies defaults when it decodes a request (and when it reads from storage), top
down: an object's property that is absent gets a deep copy of its schema's ``default``, then is
walked in turn (so a default's own unset fields are defaulted too); array items and
``additionalProperties`` values are walked by their schemas. A ``null`` in a field whose schema
is not ``nullable`` is dropped before defaulting (and so defaulted, if the schema has a
default); with ``nullable: true`` a null stays and is not defaulted. Defaults were validated
and pruned when the CRD was accepted (:mod:`pycm.sim.crd.structural`).
"""

from __future__ import annotations

import copy
from typing import Any

from pycm.sim.crd.schema import Schema

__all__ = ["apply_defaults"]


def apply_defaults(obj: Any, schema: Schema) -> None:
    """Default ``obj`` (a custom resource, or any value at ``schema``) in place."""
    if isinstance(obj, dict):
        _object(obj, schema)
    elif isinstance(obj, list) and schema.items is not None:
        for item in obj:
            apply_defaults(item, schema.items)


def _object(obj: dict[str, Any], s: Schema) -> None:
    for name, sub in s.properties.items():
        if name in obj and obj[name] is None and not sub.nullable:
            del obj[name]
        if name not in obj and sub.has_default:
            obj[name] = copy.deepcopy(sub.default)
        if name in obj:
            apply_defaults(obj[name], sub)
    if isinstance(s.additional, Schema):
        extra = s.additional
        for name in [k for k in obj if k not in s.properties]:
            if obj[name] is None and not extra.nullable:
                if extra.has_default:
                    obj[name] = copy.deepcopy(extra.default)
                else:
                    del obj[name]
                    continue
            apply_defaults(obj[name], extra)
