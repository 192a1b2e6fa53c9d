"""What the in-process sharded-member tests share: a wait on a condition, and the check that no
key was reconciled by two members in overlapping time."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable

# (member, key, began, ended): one reconcile, monotonic seconds.
Reconcile = tuple[str, str, float, float]


async def until(predicate: Callable[[], object], what: str, timeout: float = 8.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        await asyncio.sleep(0.05)


def no_overlap(log: list[Reconcile]) -> None:
    """Each key's reconciles, in time order, never overlap unless by the same member."""
    by_key: dict[str, list[tuple[float, float, str]]] = {}
    for member, key, began, ended in log:
        by_key.setdefault(key, []).append((began, ended, member))
    for key, spans in by_key.items():
        spans.sort()
        for (_, end_a, a), (start_b, _, b) in itertools.pairwise(spans):
            assert a == b or start_b >= end_a, f"{key} reconciled by {a} and {b} at once"
