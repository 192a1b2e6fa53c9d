"""Builders and loop helpers shared by the cache tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pycm.trace.bus import Subscription
from pycm.trace.events import Event
from pycm.util.clock import FakeClock


def pod(
    name: str,
    rv: str = "1",
    *,
    ns: str | None = "default",
    labels: dict[str, str] | None = None,
    owner_uid: str | None = None,
    managed_fields: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": rv, "uid": f"uid-{name}"}
    if ns is not None:
        meta["namespace"] = ns
    if labels:
        meta["labels"] = labels
    if owner_uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "rs",
                "uid": owner_uid,
                "controller": True,
            }
        ]
    if managed_fields:
        meta["managedFields"] = [{"manager": "kubectl", "operation": "Update"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": dict(spec)}


def bookmark(rv: str) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"resourceVersion": rv}}


def status(code: int, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


async def until(cond: Callable[[], bool], what: str = "condition", turns: int = 2000) -> None:
    """Yield to the loop until ``cond()`` holds; fail after ``turns`` turns (no real sleeping)."""
    for _ in range(turns):
        if cond():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{what} never became true")


async def settle(turns: int = 50) -> None:
    for _ in range(turns):
        await asyncio.sleep(0)


async def advance_to_next(clock: FakeClock) -> float:
    """Move the fake clock to the earliest sleeper's deadline (waiting for one to park)."""
    await until(lambda: clock.next_deadline() is not None, "a sleeper")
    deadline = clock.next_deadline()
    assert deadline is not None
    step = max(0.0, deadline - clock.monotonic())
    clock.advance(step)
    await settle(5)
    return step


def of_kind(sub: Subscription, cls: type[Event]) -> list[Any]:
    return [e for e in sub.drain() if isinstance(e, cls)]
