"""Which fields an update changed: paths only, never values (what a reconcile's trigger names).

``changed_paths(old, new)`` walks two versions of one object to a bounded depth and names the
paths whose values differ, in the order the new object holds them, e.g.
``spec.replicas,metadata.annotations["deployment.kubernetes.io/revision"],status.readyReplicas``.
A map key that is not a plain identifier is written in brackets, as kubectl's JSONPath does.
Lists are compared whole (``status.conditions``): their items have no stable path to name.
``metadata.resourceVersion`` and ``metadata.managedFields`` change with every write and are
never named. At most ``limit`` paths; one more changed path makes the last ``…``.

Cost: only a handler that enqueues calls it, once per update event; the walk stops at the
first level whose sub-trees compare equal (``==`` on dicts is C), so an update touching one
field costs a few dict comparisons.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_PATHS", "changed_paths"]

MAX_DEPTH = 3  # spec.template.spec, metadata.labels["app"]: deeper names add little
MAX_PATHS = 12
_IGNORED = frozenset({"resourceVersion", "managedFields"})
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MISSING = object()


def _step(prefix: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{prefix}.{key}" if prefix else key
    return f'{prefix}["{key}"]' if prefix else f'["{key}"]'


def changed_paths(old: Any, new: Any, *, depth: int = MAX_DEPTH, limit: int = MAX_PATHS) -> str:
    """The paths that differ between ``old`` and ``new``, comma-separated ("" if none)."""
    out: list[str] = []
    if isinstance(old, dict) and isinstance(new, dict):
        _walk(old, new, "", depth, limit + 1, out)
    if len(out) > limit:
        out[limit:] = ["…"]
    return ",".join(out)


def _walk(
    old: dict[str, Any], new: dict[str, Any], prefix: str, depth: int, room: int, out: list[str]
) -> None:
    for key, value in new.items():
        if len(out) >= room:
            return
        if prefix == "metadata" and key in _IGNORED:
            continue
        was = old.get(key, _MISSING)
        if was is value or was == value:
            continue
        path = _step(prefix, key)
        if depth > 1 and isinstance(value, dict) and isinstance(was, dict):
            _walk(was, value, path, depth - 1, room, out)
        else:
            out.append(path)
    for key in old:
        if len(out) >= room:
            return
        if key not in new and not (prefix == "metadata" and key in _IGNORED):
            out.append(_step(prefix, key))
