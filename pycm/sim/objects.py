"""Small helpers over plain-dict objects: metadata access, timestamps, names, copies."""

from __future__ import annotations

import datetime as dt
import functools
import os
import secrets
from typing import Any

import orjson

__all__ = [
    "MAX_DEPTH",
    "Obj",
    "copy_value",
    "deep_copy",
    "generate_name",
    "meta",
    "nesting_exceeds",
    "new_uid",
    "rfc3339",
]

Obj = dict[str, Any]

# The most levels of nested objects and arrays a request body (or a JSON patch's result) may
# have. kube allows 10,000 (Go's encoding/json and go-yaml refuse deeper with "exceeded max
# depth"); the emulator cannot: orjson encodes at most 254 levels (a deeper object stored would
# fail every response that carries it), a response wraps an object in up to 4 more (a list's
# items, a watch event, a Table row) and managedFields repeat its paths 5 levels down, and the
# emulator's recursive walks (pruning, merges, field sets) take 1-3 of Python's 1,000 frames a
# level. 100 leaves twice the room for both, and is five times deeper than any kind served
# here nests (a pod template's affinity terms: about 15).
MAX_DEPTH = 100

# kube's utilrand alphabet: no vowels (no words), no 0/1/3 (look-alikes).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def deep_copy(obj: Obj) -> Obj:
    """A deep copy of a JSON-shaped dict (orjson round trip: faster than copy.deepcopy)."""
    copied: Obj = orjson.loads(orjson.dumps(obj))
    return copied


def copy_value(value: Any) -> Any:
    """A deep copy of any JSON value."""
    return orjson.loads(orjson.dumps(value))


def meta(obj: Obj) -> Obj:
    """``obj['metadata']``, created if absent."""
    m = obj.get("metadata")
    if not isinstance(m, dict):
        m = {}
        obj["metadata"] = m
    return m


def new_uid() -> str:
    """A random (version 4) UUID, as ``str(uuid.uuid4())`` writes it at a fifth of its cost
    (uuid.UUID validates and converts what is only formatted here; one per create)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def generate_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_ALPHANUMS) for _ in range(5))


def rfc3339(wall_ns: int) -> str:
    """RFC 3339 at second precision in UTC with a ``Z``, as metav1.Time marshals."""
    return _rfc3339_seconds(wall_ns // 1_000_000_000)


# Every write stamps the current second, often several times (creationTimestamp, managedFields):
# formatting it once a second instead of each time (strftime is most of a create's clock cost).
@functools.lru_cache(maxsize=16)
def _rfc3339_seconds(seconds: int) -> str:
    moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp (``Z`` or offset; fractions allowed)."""
    value = text.replace("Z", "+00:00")
    return dt.datetime.fromisoformat(value).timestamp()


def nesting_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` (decoded JSON) nests objects and arrays more than ``limit`` deep.
    Iterative (no recursion to run out of): one level at a time, each level's containers
    gathered by a comprehension (about twice as fast as a stack of (node, depth) pairs)."""
    if type(value) is not dict and type(value) is not list:
        return False
    level: list[Any] = [value]
    depth = 1
    while True:
        level = [
            child
            for node in level
            for child in (node.values() if type(node) is dict else node)
            if type(child) is dict or type(child) is list
        ]
        if not level:
            return False
        depth += 1
        if depth > limit:
            return True
