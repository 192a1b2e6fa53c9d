"""The manager's parts in typed runnable groups, started and stopped in one written order.

As controller-runtime's runnable groups (``pkg/manager/runnable_group.go``), in KCM's order:

=================== ======================================================= ===============
group               holds                                                   starts
=================== ======================================================= ===============
``OBSERVERS``       bus subscribers: trace recorder, state reducer, OTel    first
``SERVERS``         secure and insecure serving (health, metrics, debug)    before election
``LEADER_ELECTION`` the elector (its lease is released when it stops)       then
``CACHES``          informer factories; the event recorders                 on leading
``CONTROLLERS``     controllers' workers, plugins' background tasks         after caches
=================== ======================================================= ===============

Stop is the exact reverse — controllers first (their in-flight reconciles finish, bounded),
then caches and event recorders (the last events are sent), then leader election (the lease
is released only once nothing reconciles), servers, and the observers last so they see the
whole shutdown. The order is this enum's; nothing depends on task names.

A group is *opened* by :meth:`RunnableGroups.start` (every earlier group must be open);
members added to an open group start at once, members added before wait for it. Within a
group, tasks are cancelled together and services stopped newest first.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.tasks import cancel_and_wait, create_guarded_task

__all__ = ["Group", "RunFunc", "RunnableGroups", "Service"]

log = logging.getLogger("pycm.app")

RunFunc = Callable[[], Coroutine[Any, Any, None]]
"""A task's body: runs until cancelled."""


class Service(Protocol):
    """A part started and stopped by calls (a server): start returns once it is up, or
    raises; stop returns once it is down."""

    async def start(self) -> Any: ...

    async def stop(self) -> None: ...


class Group(enum.IntEnum):
    """The groups in start order; stop runs in reverse."""

    OBSERVERS = 1
    SERVERS = 2
    LEADER_ELECTION = 3
    CACHES = 4
    CONTROLLERS = 5


@dataclass
class _Member:
    name: str
    run: RunFunc | None = None
    service: Service | None = None
    task: asyncio.Task[None] | None = None
    started: bool = False


@dataclass
class _GroupState:
    members: list[_Member] = field(default_factory=list)
    open: bool = False


class RunnableGroups:
    """The manager's runnables by group. ``on_failure(name, exc)`` hears of a task that died
    on its own (not by cancellation)."""

    def __init__(
        self,
        *,
        on_failure: Callable[[str, BaseException], None] | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self._groups = {group: _GroupState() for group in Group}
        self._on_failure = on_failure
        self._clock = clock
        self._stopping = False  # once set, nothing starts any more

    def add(self, group: Group, name: str, run: RunFunc) -> None:
        """A task in ``group``: started now if the group is open, else when it opens."""
        member = _Member(name, run=run)
        self._groups[group].members.append(member)
        if self._groups[group].open and not self._stopping:
            self._spawn(member)

    async def add_service(self, group: Group, name: str, service: Service) -> Any:
        """A service in ``group``, started now if the group is open (its start's result is
        returned; a failure to start propagates and the service is not kept)."""
        member = _Member(name, service=service)
        state = self._groups[group]
        if not state.open or self._stopping:
            state.members.append(member)
            return None
        result = await service.start()
        member.started = True
        state.members.append(member)
        return result

    def is_open(self, group: Group) -> bool:
        return self._groups[group].open

    def names(self, group: Group) -> list[str]:
        return [member.name for member in self._groups[group].members]

    async def start(self, group: Group) -> None:
        """Open ``group`` and start its waiting members, in the order they were added (a
        no-op once stopping began: a leader still starting must not start anything new)."""
        if self._stopping:
            return
        earlier = [g.name for g in Group if g < group and not self._groups[g].open]
        if earlier:
            raise RuntimeError(f"cannot start {group.name} before {', '.join(earlier)}")
        state = self._groups[group]
        state.open = True
        for member in list(state.members):
            if member.started:
                continue
            if member.service is not None:
                try:
                    await member.service.start()
                except BaseException:
                    state.members.remove(member)
                    raise
                member.started = True
            else:
                self._spawn(member)

    def _spawn(self, member: _Member) -> None:
        assert member.run is not None
        name = member.name
        on_failure = self._on_failure
        member.task = create_guarded_task(
            member.run(),
            name=name,
            logger=log,
            on_failure=(lambda exc: on_failure(name, exc)) if on_failure else None,
        )
        member.started = True

    async def stop(
        self,
        timeout: float,  # noqa: ASYNC109 - a budget whose overrun is reported, not raised
        *,
        observers_timeout: float | None = None,
    ) -> list[str]:
        """Stop every group in reverse order; returns the names of tasks that did not stop in
        time (they are left cancelled). The groups share ``timeout`` seconds, except the
        observers, which get ``observers_timeout`` of their own when given: they flush what
        the others emitted while stopping. No group opens once stopping has begun."""
        self._stopping = True
        deadline = self._clock.monotonic() + timeout
        stuck: list[str] = []
        for group in reversed(Group):
            state = self._groups[group]
            state.open = False
            if group is Group.OBSERVERS and observers_timeout is not None:
                deadline = self._clock.monotonic() + observers_timeout
            tasks = [m.task for m in reversed(state.members) if m.task is not None]
            left = max(0.0, deadline - self._clock.monotonic())
            for task in await cancel_and_wait(tasks, timeout=left, clock=self._clock):
                stuck.append(task.get_name())
            for member in reversed(state.members):
                if member.service is not None and member.started:
                    member.started = False
                    try:
                        await member.service.stop()
                    except Exception as exc:
                        log.error("stopping %s failed: %s", member.name, exc)
        return stuck
