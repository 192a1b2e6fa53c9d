"""Pruning: dropping the fields a custom resource's structural schema does not specify.

kube-apiserver prunes a custom resource on every write (and on read from storage): at any
depth, a field of an object that the schema's ``properties`` do not name is dropped, unless
the object's schema sets ``x-kubernetes-preserve-unknown-fields: true`` (then unknown fields are
kept as they are, while the specified ones are still pruned by their own schemas). An object
with ``additionalProperties`` keeps every key and prunes each value by that schema. At the root
and in every ``x-kubernetes-embedded-resource``, ``apiVersion``, ``kind`` and ``metadata`` are
always kept, ``metadata`` pruned to ObjectMeta's fields (kube decodes it into its Go type).

:func:`prune` changes the object in place and returns the dropped fields' paths in document
order (``spec.foo``, ``spec.items[0].bar``), which the handler turns into kube's ``unknown
field`` warnings, or a 400 under ``fieldValidation=Strict``.
"""

from __future__ import annotations

from typing import Any

from pycm.sim.crd.schema import Schema
from pycm.sim.schemas import OBJECT_META

__all__ = ["prune"]

_KEPT_AT_ROOT = ("apiVersion", "kind", "metadata")


def prune(obj: dict[str, Any], schema: Schema) -> list[str]:
    """Prune the custom resource ``obj`` (its root) by ``schema``; the dropped paths."""
    found: list[str] = []
    _object(obj, schema, "", found, resource=True)
    return found


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _metadata(meta: Any, path: str, found: list[str]) -> None:
    if not isinstance(meta, dict):
        return
    for name in [k for k in meta if k not in OBJECT_META]:
        del meta[name]
        found.append(_join(path, name))


def _object(obj: dict[str, Any], s: Schema, path: str, found: list[str], resource: bool) -> None:
    if resource:
        _metadata(obj.get("metadata"), _join(path, "metadata"), found)
    drop: list[str] = []
    for name, value in obj.items():
        if resource and name in _KEPT_AT_ROOT:
            continue
        sub = s.properties.get(name)
        if sub is None and isinstance(s.additional, Schema):
            sub = s.additional
        if sub is not None:
            _value(value, sub, _join(path, name), found)
        elif not (s.preserve_unknown or s.additional is True):
            drop.append(name)
            found.append(_join(path, name))
    for name in drop:
        del obj[name]


def _value(value: Any, s: Schema, path: str, found: list[str]) -> None:
    if isinstance(value, dict):
        _object(value, s, path, found, resource=s.embedded)
    elif isinstance(value, list) and s.items is not None:
        for i, item in enumerate(value):
            _value(item, s.items, f"{path}[{i}]", found)
