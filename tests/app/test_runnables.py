"""Runnable groups: the manager's start and stop order, written once in Group and kept here."""

from __future__ import annotations

import asyncio

import pytest

from pycm.app.runnables import Group, RunnableGroups
from pycm.util.clock import FakeClock


class Journal:
    """Every start and stop, in order, as ``"start <name>"`` / ``"stop <name>"``."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def task(self, name: str) -> object:
        async def run() -> None:
            self.lines.append(f"start {name}")
            try:
                await asyncio.Event().wait()
            finally:
                self.lines.append(f"stop {name}")

        return run

    def service(self, name: str) -> Service:
        return Service(self, name)


class Service:
    def __init__(self, journal: Journal, name: str, *, fail: bool = False) -> None:
        self.journal, self.name, self.fail = journal, name, fail

    async def start(self) -> str:
        if self.fail:
            raise OSError("address in use")
        self.journal.lines.append(f"start {self.name}")
        return f"{self.name} up"

    async def stop(self) -> None:
        self.journal.lines.append(f"stop {self.name}")


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def _manager_like(journal: Journal, groups: RunnableGroups) -> None:
    """The parts in the order the manager creates them (not the order they start in)."""
    groups.add(Group.OBSERVERS, "trace recorder", journal.task("trace recorder"))  # type: ignore[arg-type]
    groups.add(Group.OBSERVERS, "state reducer", journal.task("state reducer"))  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_groups_start_in_enum_order_stop_in_reverse() -> None:
    journal, groups = Journal(), RunnableGroups(clock=FakeClock())
    _manager_like(journal, groups)
    await groups.start(Group.OBSERVERS)
    await _settle()  # tasks take their first step
    await groups.add_service(Group.SERVERS, "secure serving", journal.service("secure serving"))
    await groups.add_service(Group.SERVERS, "debug streams", journal.service("debug streams"))
    await groups.start(Group.SERVERS)
    await _settle()  # tasks take their first step
    groups.add(Group.LEADER_ELECTION, "leader election", journal.task("leader election"))  # type: ignore[arg-type]
    await groups.start(Group.LEADER_ELECTION)
    await _settle()  # tasks take their first step
    await _settle()
    # On leading: event recorders are made during the controllers' init, before the caches open.
    groups.add(Group.CACHES, "event recorder a", journal.task("event recorder a"))  # type: ignore[arg-type]
    await groups.add_service(Group.CACHES, "informer factories", journal.service("informers"))
    await groups.start(Group.CACHES)
    await _settle()  # tasks take their first step
    groups.add(Group.CONTROLLERS, "controller a", journal.task("controller a"))  # type: ignore[arg-type]
    groups.add(Group.CONTROLLERS, "controller b", journal.task("controller b"))  # type: ignore[arg-type]
    await groups.start(Group.CONTROLLERS)
    await _settle()  # tasks take their first step
    await _settle()
    started = list(journal.lines)
    assert started == [
        "start trace recorder",
        "start state reducer",
        "start secure serving",
        "start debug streams",
        "start leader election",
        "start informers",
        "start event recorder a",
        "start controller a",
        "start controller b",
    ]
    journal.lines.clear()
    assert await groups.stop(15.0, observers_timeout=5.0) == []
    stops = journal.lines
    # Within a group tasks are cancelled together (their finally blocks run in any order);
    # between groups the order is fixed: controllers, caches, election, servers, observers.
    assert set(stops[:2]) == {"stop controller a", "stop controller b"}
    assert set(stops[2:4]) == {"stop event recorder a", "stop informers"}
    assert (
        stops[4:]
        == [
            "stop leader election",
            "stop debug streams",  # services: newest first
            "stop secure serving",
            *sorted(stops[7:]),
        ]
    )
    assert set(stops[7:]) == {"stop trace recorder", "stop state reducer"}


@pytest.mark.asyncio
async def test_groups_start_before_earlier_group_raises() -> None:
    groups = RunnableGroups(clock=FakeClock())
    await groups.start(Group.OBSERVERS)
    with pytest.raises(RuntimeError, match="cannot start CACHES before SERVERS, LEADER_ELECTION"):
        await groups.start(Group.CACHES)
    await groups.stop(1.0)


@pytest.mark.asyncio
async def test_groups_add_to_open_group_starts_at_once() -> None:
    journal, groups = Journal(), RunnableGroups(clock=FakeClock())
    for group in Group:
        await groups.start(group)
    groups.add(Group.CONTROLLERS, "plugin task", journal.task("plugin task"))  # type: ignore[arg-type]
    assert await groups.add_service(Group.SERVERS, "late", journal.service("late")) == "late up"
    await _settle()
    assert journal.lines == ["start late", "start plugin task"]
    await groups.stop(5.0)
    assert journal.lines[2:] == ["stop plugin task", "stop late"]


@pytest.mark.asyncio
async def test_groups_service_fails_to_start_raises_not_kept() -> None:
    journal, groups = Journal(), RunnableGroups(clock=FakeClock())
    await groups.start(Group.OBSERVERS)
    await groups.add_service(Group.SERVERS, "ok", journal.service("ok"))
    await groups.add_service(Group.SERVERS, "bad", Service(journal, "bad", fail=True))
    with pytest.raises(OSError, match="address in use"):
        await groups.start(Group.SERVERS)
    assert groups.names(Group.SERVERS) == ["ok"]
    await groups.stop(5.0)
    assert journal.lines == ["start ok", "stop ok"]  # the started one is still stopped


@pytest.mark.asyncio
async def test_groups_once_stopping_nothing_starts() -> None:
    journal, groups = Journal(), RunnableGroups(clock=FakeClock())
    await groups.start(Group.OBSERVERS)
    await groups.stop(5.0)
    # A leader still building its controllers when the shutdown began:
    groups.add(Group.CONTROLLERS, "late controller", journal.task("late controller"))  # type: ignore[arg-type]
    await groups.start(Group.SERVERS)
    assert not groups.is_open(Group.SERVERS)
    await _settle()
    assert journal.lines == []


@pytest.mark.asyncio
async def test_groups_task_dies_on_failure_named() -> None:
    failures: list[tuple[str, str]] = []
    groups = RunnableGroups(
        clock=FakeClock(), on_failure=lambda name, exc: failures.append((name, str(exc)))
    )

    async def boom() -> None:
        raise ValueError("boom")

    groups.add(Group.OBSERVERS, "otel sink", boom)
    await groups.start(Group.OBSERVERS)
    await _settle()
    assert failures == [("otel sink", "boom")]
    await groups.stop(1.0)


@pytest.mark.asyncio
async def test_groups_stuck_task_reported_after_timeout() -> None:
    clock = FakeClock()
    groups = RunnableGroups(clock=clock)
    release = asyncio.Event()

    async def stubborn() -> None:
        while True:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                await release.wait()  # holds on past its cancellation
                raise

    groups.add(Group.OBSERVERS, "stubborn", stubborn)
    await groups.start(Group.OBSERVERS)
    await _settle()
    stopping = asyncio.ensure_future(groups.stop(3.0))
    await _settle()
    assert not stopping.done()
    clock.advance(3.0)
    assert await stopping == ["stubborn"]
    release.set()
    await _settle()
