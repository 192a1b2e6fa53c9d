"""Instances: one record per manager replica, its start-up waterfall, health checks and exit.

An instance is created by its first event (any kind) in :meth:`State.apply`; the handlers here
fold the start-up and serving kinds into its waterfall (``steps``: bar name -> bar, the first
occurrence of a name wins, so a relist is not start-up), its health checks and its exit. Other
domains add their own bars through :func:`bar_begin`, :func:`bar_end` and :func:`bar_point`.
Roles (leader/standby) are set by the lease handlers (:mod:`pycm.trace.state.leases`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Protocol, TypedDict

from pycm.trace.events import StepEnd
from pycm.trace.kinds import (
    FlagsParsed,
    HandlerChainBuilt,
    HealthCheckChanged,
    ManagerStopped,
    ServingStarted,
    ServingStopped,
    StartupBegan,
    StartupFinished,
)
from pycm.trace.state import steps
from pycm.trace.state.domain import Moment
from pycm.trace.state.record import BoundedTable, Record, text_key
from pycm.trace.state.registry import handles, not_folded
from pycm.trace.state.steps import close_step, open_step

__all__ = [
    "MAX_HEALTH",
    "MAX_INSTANCES",
    "MAX_STEPS",
    "SECTION",
    "HealthSnapshot",
    "InstanceRecord",
    "InstanceSnapshot",
    "StateView",
    "StepBarSnapshot",
    "StepRecord",
    "attach",
    "bar_begin",
    "bar_end",
    "bar_point",
    "dump",
    "load",
    "new_table",
]

# A viewer watches a handful of replicas: far above that only stops a broken stream.
MAX_INSTANCES = 64
MAX_STEPS = 256  # start-up waterfall bars per instance
MAX_HEALTH = 64


class StepBarSnapshot(TypedDict):
    """One bar of an instance's start-up waterfall."""

    start_ts: Annotated[int, "when the step began (Unix ns)"]
    dur_ns: Annotated[int, "its duration (0 while it runs)"]
    outcome: Annotated[str, 'ok, error, cancelled; "" while it runs']
    error: Annotated[str, "the error of a failed step"]


class HealthSnapshot(TypedDict):
    """The latest state of one health check."""

    healthy: Annotated[bool, "the check passes"]
    reason: Annotated[str, "why it does not"]
    ts: Annotated[int, "when it last changed (Unix ns)"]


class InstanceSnapshot(TypedDict):
    """One manager replica as seen through its events."""

    name: Annotated[str, "the instance (elector identity)"]
    role: Annotated[str, "leader, standby, unknown or stopped"]
    lease: Annotated[str, "the lease it campaigns for (namespace/name), once seen"]
    first_ts: Annotated[int, "its first event (Unix ns)"]
    last_ts: Annotated[int, "its newest event (Unix ns)"]
    last_seq: Annotated[int, "the highest seq seen from it"]
    events: Annotated[int, "events applied from it"]
    command: Annotated[str, "the command that started it (run, demo, ...)"]
    version: Annotated[str, "its pycm version"]
    exit_code: Annotated[int | None, "its exit status once stopped, else null"]
    stop_reason: Annotated[str, "why it stopped"]
    steps: Annotated[dict[str, StepBarSnapshot], "start-up waterfall: bar name -> bar"]
    health: Annotated[dict[str, HealthSnapshot], "health check -> its latest state"]
    touched: Annotated[int, "recency for eviction (applied count at its last update)"]


@dataclass(slots=True)
class StepRecord(Record):
    """One bar of an instance's start-up waterfall. ``outcome`` is "" while the step runs."""

    start_ts: int = 0
    dur_ns: int = 0
    outcome: str = ""
    error: str = ""


def _step_records(data: Any) -> dict[str, StepRecord]:
    return {k: StepRecord.load(v) for k, v in (data or {}).items()}


@dataclass(slots=True)
class InstanceRecord(Record):
    """One manager replica as seen through its events."""

    name: str = ""
    role: str = "unknown"  # leader, standby, unknown, stopped
    lease: str = ""  # the lease this instance campaigns for (namespace/name), once seen
    first_ts: int = 0
    last_ts: int = 0
    last_seq: int = 0
    events: int = 0
    command: str = ""
    version: str = ""
    exit_code: int | None = None
    stop_reason: str = ""
    # Start-up waterfall, step name -> bar; the first occurrence of a name wins (a relist is
    # not start-up); cleared when a new start-up begins after one that ended. At most MAX_STEPS.
    steps: dict[str, StepRecord] = field(default_factory=dict)
    health: dict[str, dict[str, Any]] = field(default_factory=dict)  # check -> state
    touched: int = 0

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {"steps": _step_records}


SECTION = "instances"


class StateView(steps.StateView, Protocol):
    """The state as this domain sees it."""

    instances: BoundedTable[str, InstanceRecord]


def new_table() -> BoundedTable[str, InstanceRecord]:
    # The instance name's type is checked by State.apply before the table is reached.
    return BoundedTable(MAX_INSTANCES, lambda name: InstanceRecord(name=name))


def attach(state: StateView) -> None:
    state.instances = new_table()


def dump(state: StateView, at: Moment) -> dict[str, InstanceSnapshot]:
    return {name: i.dump() for name, i in state.instances.items()}  # type: ignore[misc]


def load(state: StateView, data: Any) -> None:
    state.instances.fill((k, InstanceRecord.load(v)) for k, v in (data or {}).items())


# ---------------------------------------------------------------------------------------------
# The waterfall
# ---------------------------------------------------------------------------------------------


def bar_begin(inst: InstanceRecord, name: str, ts: int) -> None:
    steps = inst.steps
    if name not in steps and len(steps) < MAX_STEPS:
        steps[name] = StepRecord(start_ts=ts)


def bar_end(inst: InstanceRecord, name: str, end: StepEnd) -> None:
    steps = inst.steps
    bar = steps.get(name)
    if bar is None:
        if len(steps) < MAX_STEPS:
            steps[name] = StepRecord(
                start_ts=end.ts - end.dur_ns,
                dur_ns=end.dur_ns,
                outcome=str(end.outcome),
                error=end.error,
            )
    elif not bar.outcome:
        bar.dur_ns = end.dur_ns
        bar.outcome = str(end.outcome)
        bar.error = end.error


def bar_point(inst: InstanceRecord, name: str, start_ts: int, dur_ns: int) -> None:
    steps = inst.steps
    if name not in steps and len(steps) < MAX_STEPS:
        steps[name] = StepRecord(start_ts=start_ts, dur_ns=dur_ns, outcome="ok")


# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


@handles(StartupBegan)
def _startup_began(state: StateView, ev: StartupBegan, inst: InstanceRecord) -> None:
    open_step(state, ev)
    previous = inst.steps.get("startup")
    if previous is not None and previous.outcome:
        inst.steps.clear()  # a new run of this instance
        inst.exit_code = None
        inst.stop_reason = ""
        inst.role = "unknown"
    inst.command = ev.command
    inst.version = ev.version
    bar_begin(inst, "startup", ev.ts)


@handles(StartupFinished)
def _startup_finished(state: StateView, ev: StartupFinished, inst: InstanceRecord) -> None:
    close_step(state, ev)
    bar_end(inst, "startup", ev)


@handles(FlagsParsed)
def _flags_parsed(state: StateView, ev: FlagsParsed, inst: InstanceRecord) -> None:
    bar_point(inst, "flags.parsed", ev.ts - ev.dur_ns, ev.dur_ns)


@handles(HandlerChainBuilt)
def _handler_chain_built(state: StateView, ev: HandlerChainBuilt, inst: InstanceRecord) -> None:
    bar_point(inst, "server.handler_chain_built", ev.ts - ev.dur_ns, ev.dur_ns)


@handles(ServingStarted)
def _serving_started(state: StateView, ev: ServingStarted, inst: InstanceRecord) -> None:
    name = f"server.serving_started/{ev.address}:{ev.port}"
    bar_point(inst, name, ev.ts - ev.dur_ns, ev.dur_ns)


not_folded(ServingStopped, "the manager's stop is folded from manager.stopped")


@handles(HealthCheckChanged)
def _health_changed(state: StateView, ev: HealthCheckChanged, inst: InstanceRecord) -> None:
    health = inst.health
    check = text_key(ev.check)
    if check in health or len(health) < MAX_HEALTH:
        health[check] = {"healthy": ev.healthy, "reason": ev.reason, "ts": ev.ts}


@handles(ManagerStopped)
def _manager_stopped(state: StateView, ev: ManagerStopped, inst: InstanceRecord) -> None:
    inst.role = "stopped"
    inst.exit_code = ev.exit_code
    inst.stop_reason = ev.reason
    if ev.exit_code:
        state.error(ev, f"manager stopped (exit {ev.exit_code}): {ev.reason}")
