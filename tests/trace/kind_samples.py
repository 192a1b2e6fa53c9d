"""Sample events generated from the registry: one per kind, every field away from its default."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any

from pycm.trace.events import REGISTRY, SCHEMA_VERSION, Event, KindInfo

ENVELOPE: dict[str, Any] = {
    "v": SCHEMA_VERSION + 1,
    "instance": "host_1234",
    "trace_id": "0af7651916cd43dd8448eb211c80319c",
    "span_id": "b7ad6b7169203331",
    "parent_id": "00f067aa0ba902b7",
    "dur_ns": 987_654,
}


def _scalar(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        (inner,) = (a for a in typing.get_args(tp) if a is not type(None))
        return inner
    return tp


def value_for(name: str, tp: Any, default: Any, salt: int) -> Any:
    """A value of type ``tp`` that differs from ``default`` (and, for text, needs escaping)."""
    tp = _scalar(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        members = [m for m in tp if m != default]
        return members[salt % len(members)]
    if tp is bool:
        return not default if isinstance(default, bool) else True
    if tp is int:
        return 1_000_003 + salt
    if tp is float:
        return 0.1 + salt  # not exactly representable: a lossy float path would show
    return f'{name} "é✓"\n\t{salt}'


def sample(info: KindInfo, seq: int = 42, ts: int = 1_700_000_000_123_456_789) -> Event:
    """An instance of ``info``'s kind with a non-default value in every field."""
    hints = typing.get_type_hints(info.cls)
    values: dict[str, Any] = {**ENVELOPE, "seq": seq, "ts": ts}
    for salt, f in enumerate(dataclasses.fields(info.cls)):
        if f.name not in values:
            values[f.name] = value_for(f.name, hints[f.name], f.default, salt)
    return info.cls(**values)


def all_samples() -> list[Event]:
    """One sample of every registered kind, with increasing seq and ts."""
    return [
        sample(info, seq=i + 1, ts=1_700_000_000_000_000_000 + i * 1_000_000)
        for i, info in enumerate(REGISTRY.values())
    ]
