"""The elector on a real :class:`LeaseLock` over a fake coordination/v1 API that behaves as
kube-apiserver does with a Lease's MicroTimes: a string it cannot parse as RFC 3339 (a year-1
``1-01-01T…``) is refused with 400, and a null time is dropped from what it serves.

A dead candidate's lease whose times are unset (null, or Go's zero time) is taken over after
LeaseDuration, as client-go does, and a holder renews such a lease without writing a year-1
string.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from pycm.kube.errors import ApiError, error_from_status
from pycm.leaderelection import LeaderCallbacks, LeaderElectionConfig, LeaderElector
from pycm.leaderelection.record import format_micro_time
from pycm.leaderelection.resourcelock import LeaseLock
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock

NS, NAME = "kube-system", "pycm"
GO_ZERO = "0001-01-01T00:00:00Z"
# What Go's time.Time accepts from JSON: RFC 3339, four-digit year.
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def APIError(code: int, message: str) -> ApiError:
    """The client's error for a Status with this code, as the real client raises it."""
    return error_from_status({"code": code, "message": message})


@dataclass
class FakeLeaseAPI:
    """One Lease, kept as the JSON bytes a server stores; optimistic concurrency by RV."""

    stored: bytes | None = None
    rv: int = 0
    writes: list[dict[str, Any]] = field(default_factory=list)

    def put(self, spec: dict[str, Any]) -> None:
        """A write by someone outside the test's electors (the dead candidate, a tool)."""
        self._store({"metadata": {"name": NAME, "namespace": NS}, "spec": spec})

    def _store(self, lease: dict[str, Any]) -> dict[str, Any]:
        spec = lease.get("spec") or {}
        for key in ("acquireTime", "renewTime"):
            value = spec.get(key)
            if value is not None and not (isinstance(value, str) and _RFC3339.match(value)):
                raise APIError(400, f'parsing time "{value}" as RFC 3339: cannot parse')
        self.rv += 1
        # Served without nulls (omitempty pointers), with a fresh resourceVersion.
        served = {**lease, "spec": {k: v for k, v in spec.items() if v is not None}}
        served["metadata"] = {**lease["metadata"], "resourceVersion": str(self.rv)}
        self.stored = orjson.dumps(served)
        self.writes.append(orjson.loads(self.stored))
        return orjson.loads(self.stored)  # type: ignore[no-any-return]

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any]:
        if self.stored is None:
            raise APIError(404, "leases.coordination.k8s.io not found")
        return orjson.loads(self.stored)  # type: ignore[no-any-return]

    async def create_lease(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.stored is not None:
            raise APIError(409, "already exists")
        return self._store(body)

    async def update_lease(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        assert self.stored is not None
        if body["metadata"].get("resourceVersion") != str(self.rv):
            raise APIError(409, "the object has been modified")
        return self._store(body)

    async def create_event(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return body


@dataclass
class Election:
    clock: FakeClock
    api: FakeLeaseAPI
    elector: LeaderElector

    async def advance(self, seconds: float, step: float = 0.1) -> None:
        moved = 0.0
        while moved < seconds - 1e-9:
            for _ in range(20):
                await asyncio.sleep(0)
            self.clock.advance(min(step, seconds - moved))
            moved += step
        for _ in range(20):
            await asyncio.sleep(0)


def _election(api: FakeLeaseAPI, identity: str) -> Election:
    clock = FakeClock()

    async def lead() -> None:
        await asyncio.Event().wait()

    config = LeaderElectionConfig(
        lock=LeaseLock(api, NS, NAME, identity),
        callbacks=LeaderCallbacks(on_started_leading=lead, on_stopped_leading=lambda: None),
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        name=NAME,
    )
    elector = LeaderElector(config, clock=clock, bus=Bus(instance=identity), rng=random.Random(7))
    return Election(clock, api, elector)


def _spec(api: FakeLeaseAPI) -> dict[str, Any]:
    assert api.stored is not None
    return orjson.loads(api.stored)["spec"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("acquire", "renew"),
    [
        pytest.param(None, None, id="null"),
        pytest.param(GO_ZERO, GO_ZERO, id="go-zero"),
        pytest.param(None, "0001-01-01T00:00:00.000000Z", id="null-and-go-zero-micro"),
    ],
)
@pytest.mark.asyncio
async def test_lease_lock_expired_lease_with_unset_times_is_taken_over_after_lease_duration(
    acquire: str | None, renew: str | None
) -> None:
    api = FakeLeaseAPI()
    api.put(
        {
            "holderIdentity": "dead",
            "leaseDurationSeconds": 15,
            "acquireTime": acquire,
            "renewTime": renew,
            "leaseTransitions": 2,
        }
    )
    e = _election(api, "b")
    task = asyncio.create_task(e.elector.run(), name="b")
    try:
        await e.advance(14.0)
        assert not e.elector.is_leader()
        assert _spec(api)["holderIdentity"] == "dead"
        await e.advance(6.0)  # past 15 s plus one jittered retry (≤ 2 s × 2.2)
        assert e.elector.is_leader()
        taken = next(w["spec"] for w in api.writes if w["spec"]["holderIdentity"] == "b")
        assert taken["leaseTransitions"] == 3
        assert taken["acquireTime"] == taken["renewTime"]
        assert _RFC3339.match(taken["acquireTime"])
        await e.advance(2.5)  # renewals keep the acquire time
        renewed = _spec(api)
        assert renewed["holderIdentity"] == "b"
        assert renewed["acquireTime"] == taken["acquireTime"]
        assert renewed["renewTime"] > taken["renewTime"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.asyncio
async def test_lease_lock_respelled_unset_times_do_not_restart_the_expiry_clock() -> None:
    # The dead holder's record is re-written unchanged in meaning (a tool, or a server that
    # normalises Go's zero time to null): no new observation, so it expires 15 s after it was
    # first seen, not 15 s after the re-write.
    api = FakeLeaseAPI()
    dead = {"holderIdentity": "dead", "leaseDurationSeconds": 15, "leaseTransitions": 0}
    api.put({**dead, "acquireTime": GO_ZERO, "renewTime": GO_ZERO})
    e = _election(api, "b")
    task = asyncio.create_task(e.elector.run(), name="b")
    try:
        await e.advance(10.0)
        api.put({**dead, "acquireTime": None, "renewTime": None})
        await e.advance(10.0)  # 20 s after the first sight, 10 s after the re-write
        assert e.elector.is_leader()
        assert _spec(api)["holderIdentity"] == "b"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.asyncio
async def test_lease_lock_holder_renewing_unset_acquire_time_writes_null_not_year_one() -> None:
    # The lease names us as holder but its acquireTime is unset (written by a tool, or by a
    # Go client's zero time): renewing keeps the acquire time, which stays unset — null, which
    # kube-apiserver accepts, not "1-01-01T00:00:00.000000Z", which it refuses.
    api = FakeLeaseAPI()
    api.put(
        {
            "holderIdentity": "a",
            "leaseDurationSeconds": 15,
            "acquireTime": "0001-01-01T00:00:00.000000Z",
            "renewTime": None,
            "leaseTransitions": 1,
        }
    )
    e = _election(api, "a")
    attempt = await e.elector.try_acquire_or_renew()
    assert attempt.ok, attempt.error
    spec = _spec(api)
    assert "acquireTime" not in spec  # written as null, served without it
    assert spec["renewTime"] == format_micro_time(e.clock.wall_ns())
    assert spec["leaseTransitions"] == 1
    e.clock.advance(2.0)
    attempt = await e.elector.try_acquire_or_renew()  # the fast path
    assert attempt.ok, attempt.error
    assert len(api.writes) == 3  # the tool's, then both renewals went through
    assert all(b"1-01-01" not in orjson.dumps(w) for w in api.writes[1:])
