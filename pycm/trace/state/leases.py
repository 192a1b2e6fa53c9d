"""Leases and roles: each Lease's holder timeline, renew latency and failures, per holder; the
timings its electors run with (``lease.election_configured``: what the viewers' renew-deadline
and lease-duration marks read);
with coordinated leader election (KEP-4355) its candidates (``lease.candidate_renewed``), the
coordinator's strategy and the preferred holder it asked the leader to hand over to
(``lease.coordination_observed``).

A holder change, whoever reports it (the new leader, a standby's acquire attempt, an observer's
``lease.leader_observed``), also sets the roles of the instances campaigning for that lease, so
a leader that dies without a word is shown as standby once another takes over.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypedDict

from pycm.trace.events import Event
from pycm.trace.histogram import Histogram
from pycm.trace.kinds import (
    AcquireResult,
    LeaderElectionConfigured,
    LeaderObserved,
    LeaseAcquireAttempted,
    LeaseAcquired,
    LeaseCandidateRenewed,
    LeaseCoordinationObserved,
    LeaseLost,
    LeaseReleased,
    LeaseRenewed,
    LeaseRenewFailed,
)
from pycm.trace.state.domain import Moment, Stream
from pycm.trace.state.record import (
    BoundedTable,
    HistogramSnapshot,
    Record,
    bump,
    ms_to_ns,
    records,
    ring,
    text_key,
)
from pycm.trace.state.registry import handles
from pycm.trace.state.startup import bar_point

if TYPE_CHECKING:
    from pycm.trace.state.startup import InstanceRecord

__all__ = [
    "HOLDER_HISTORY",
    "MAX_CANDIDATES",
    "MAX_HOLDERS",
    "MAX_LEASES",
    "RENEW_HISTORY",
    "SECTION",
    "CandidateRecord",
    "CandidateSnapshot",
    "HolderChange",
    "HolderRecord",
    "HolderSnapshot",
    "LeaseRecord",
    "LeaseSnapshot",
    "RenewAttempt",
    "StateView",
    "attach",
    "dump",
    "load",
    "new_table",
]

MAX_LEASES = 256  # `pycm lease watch` may observe every lease of a cluster
MAX_HOLDERS = 16
MAX_CANDIDATES = 16  # LeaseCandidates kept per lease (one per replica)
HOLDER_HISTORY = 64  # holder changes kept per lease (days of normal operation)
RENEW_HISTORY = 120  # renew attempts kept per lease (4 min at the default 2 s retry period)
_HOUR_NS = 3600 * 1_000_000_000


class HolderSnapshot(TypedDict):
    """Renew statistics of one holder of a lease."""

    renews: Annotated[int, "successful renews"]
    failures: Annotated[int, "failed renews"]
    last_renew_ts: Annotated[int, "the last successful renew (Unix ns)"]
    last_latency_ms: Annotated[float, "its latency"]
    max_latency_ms: Annotated[float, "the highest renew latency"]
    touched: Annotated[int, "recency for eviction"]


class HolderChange(TypedDict):
    """One change of a lease's holder."""

    ts: Annotated[int, "when it was seen (Unix ns)"]
    old: Annotated[str, 'the previous holder ("" none)']
    new: Annotated[str, 'the new holder ("" released)']
    observer: Annotated[str, "the instance that reported it"]


class RenewAttempt(TypedDict):
    """One renew attempt."""

    ts: Annotated[int, "when it ended (Unix ns)"]
    holder: Annotated[str, "who renewed"]
    latency_ms: Annotated[float, "how long it took"]
    ok: Annotated[bool, "it succeeded"]
    reason: Annotated[str, "why it failed (timeout, conflict, api_error, not_holder)"]


class CandidateSnapshot(TypedDict):
    """One LeaseCandidate of a lease (coordinated leader election)."""

    binary_version: Annotated[str, "its binaryVersion"]
    emulation_version: Annotated[str, "its emulationVersion (the oldest is elected)"]
    strategy: Annotated[str, "the strategy it asks for"]
    renews: Annotated[int, "creations and renewals seen"]
    pings: Annotated[int, "renewals in answer to the coordinator's ping"]
    last_renew_ts: Annotated[int, "the last renewal (Unix ns)"]
    touched: Annotated[int, "recency for eviction"]


class LeaseSnapshot(TypedDict):
    """One Lease (namespace/name)."""

    name: Annotated[str, "namespace/name"]
    holder: Annotated[str, 'the current holder ("" none)']
    transitions: Annotated[int, "leaseTransitions as reported (the highest seen)"]
    changes: Annotated[int, "holder changes this state saw"]
    lease_duration_s: Annotated[
        float, "the lease duration, as its electors configured it or as observed (0 unknown)"
    ]
    renew_deadline_s: Annotated[
        float, "the renew deadline its electors were configured with (0: not in the trace)"
    ]
    retry_period_s: Annotated[
        float, "the retry period its electors were configured with (0: not in the trace)"
    ]
    skew_ms: Annotated[float, "the last observed renewTime minus the observer's clock"]
    max_abs_skew_ms: Annotated[float, "the largest absolute skew seen"]
    acquired: Annotated[int, "acquisitions"]
    lost: Annotated[int, "leases lost"]
    released: Annotated[int, "releases"]
    attempts: Annotated[dict[str, int], "acquire attempts by result"]
    failures: Annotated[dict[str, int], "renew failures by reason"]
    holders: Annotated[dict[str, HolderSnapshot], "identity -> renew statistics"]
    history: Annotated[list[HolderChange], "holder changes, oldest first (bounded)"]
    renew_history: Annotated[list[RenewAttempt], "renew attempts, oldest first (bounded)"]
    renew_latency: Annotated[HistogramSnapshot, "renew latency (ms)"]
    strategy: Annotated[str, 'the coordinator\'s strategy on the lease ("" uncoordinated)']
    preferred_holder: Annotated[str, 'the candidate the coordinator wants to lead next ("" none)']
    candidates: Annotated[dict[str, CandidateSnapshot], "candidate identity -> its versions"]
    touched: Annotated[int, "recency for eviction"]
    changes_last_hour: Annotated[int, "holder changes in the hour before now_ts (derived)"]


@dataclass(slots=True)
class HolderRecord(Record):
    """Renew statistics of one holder of a lease."""

    renews: int = 0
    failures: int = 0
    last_renew_ts: int = 0
    last_latency_ms: float = 0.0
    max_latency_ms: float = 0.0
    touched: int = 0


def _holders() -> BoundedTable[str, HolderRecord]:
    return BoundedTable(MAX_HOLDERS, lambda _: HolderRecord())


@dataclass(slots=True)
class CandidateRecord(Record):
    """One LeaseCandidate of a lease."""

    binary_version: str = ""
    emulation_version: str = ""
    strategy: str = ""
    renews: int = 0
    pings: int = 0
    last_renew_ts: int = 0
    touched: int = 0


def _candidates() -> BoundedTable[str, CandidateRecord]:
    return BoundedTable(MAX_CANDIDATES, lambda _: CandidateRecord())


@dataclass(slots=True)
class LeaseRecord(Record):
    """One Lease (namespace/name): holder timeline, renew latency and failures."""

    name: str = ""
    holder: str = ""
    transitions: int = 0  # leaseTransitions as reported (the highest seen)
    changes: int = 0  # holder changes this state saw
    lease_duration_s: float = 0.0
    # As the electors configured them (lease.election_configured); 0 when the trace has no
    # such event (a recording older than the kind): the viewers then show kube's defaults.
    renew_deadline_s: float = 0.0
    retry_period_s: float = 0.0
    skew_ms: float = 0.0  # the last observed renewTime - local clock
    max_abs_skew_ms: float = 0.0
    acquired: int = 0
    lost: int = 0
    released: int = 0
    attempts: dict[str, int] = field(default_factory=dict)  # acquire attempt result -> count
    failures: dict[str, int] = field(default_factory=dict)  # renew failure reason -> count
    holders: BoundedTable[str, HolderRecord] = field(default_factory=_holders)
    history: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=HOLDER_HISTORY))
    renew_history: deque[dict[str, Any]] = field(
        default_factory=lambda: deque(maxlen=RENEW_HISTORY)
    )
    renew_latency: Histogram = field(default_factory=Histogram)
    strategy: str = ""  # the coordinator's (KEP-4355); "" when the lease is not coordinated
    preferred_holder: str = ""  # whom the coordinator wants to lead next; "" none
    candidates: BoundedTable[str, CandidateRecord] = field(default_factory=_candidates)
    touched: int = 0

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "holders": records(HolderRecord, MAX_HOLDERS),
        "candidates": records(CandidateRecord, MAX_CANDIDATES),
        "history": ring(HOLDER_HISTORY),
        "renew_history": ring(RENEW_HISTORY),
        "renew_latency": Histogram.from_dict,
    }


SECTION = "leases"


class StateView(Stream, Protocol):
    """The state as this domain sees it."""

    leases: BoundedTable[str, LeaseRecord]
    instances: BoundedTable[str, InstanceRecord]


def new_table() -> BoundedTable[str, LeaseRecord]:
    return BoundedTable(MAX_LEASES, lambda name: LeaseRecord(name=text_key(name)))


def attach(state: StateView) -> None:
    state.leases = new_table()


def dump(state: StateView, at: Moment) -> dict[str, LeaseSnapshot]:
    now = at.now
    out: dict[str, LeaseSnapshot] = {}
    for name, lease in state.leases.items():
        d = lease.dump()
        d["changes_last_hour"] = sum(1 for h in lease.history if h["ts"] > now - _HOUR_NS)
        out[name] = d  # type: ignore[assignment]
    return out


def load(state: StateView, data: Any) -> None:
    state.leases.fill((k, LeaseRecord.load(v)) for k, v in (data or {}).items())


# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


def _set_holder(
    state: StateView, lease: LeaseRecord, new: str, ev: Event, old: str | None = None
) -> None:
    """Record a holder change of ``lease`` (a no-op when ``new`` already holds it)."""
    if new == lease.holder:
        return
    lease.history.append(
        {
            "ts": ev.ts,
            "old": lease.holder if old is None else old,
            "new": new,
            "observer": ev.instance,
        }
    )
    lease.holder = new
    lease.changes += 1
    for inst in state.instances.values():
        if inst.lease == lease.name and inst.role != "stopped":
            inst.role = "leader" if inst.name == new else "standby"


@handles(LeaderElectionConfigured)
def _election_configured(
    state: StateView, ev: LeaderElectionConfigured, inst: InstanceRecord
) -> None:
    lease = state.leases[ev.lease]
    lease.touched = state.applied
    inst.lease = ev.lease
    lease.lease_duration_s = ev.lease_duration_s
    lease.renew_deadline_s = ev.renew_deadline_s
    lease.retry_period_s = ev.retry_period_s


@handles(LeaseAcquireAttempted)
def _acquire_attempted(state: StateView, ev: LeaseAcquireAttempted, inst: InstanceRecord) -> None:
    lease = state.leases[ev.lease]
    lease.touched = state.applied
    inst.lease = ev.lease
    bump(lease.attempts, ev.result)
    if ev.result == AcquireResult.ERROR:
        state.error(ev, f"acquire {ev.lease}: {ev.error}")
    if ev.result in (AcquireResult.ACQUIRED, AcquireResult.CREATED):
        _set_holder(state, lease, ev.identity or ev.instance, ev)
        inst.role = "leader"
        return
    if ev.holder:
        _set_holder(state, lease, ev.holder, ev)
    if inst.role != "stopped":
        inst.role = "standby"


@handles(LeaseAcquired)
def _acquired(state: StateView, ev: LeaseAcquired, inst: InstanceRecord) -> None:
    lease = state.leases[ev.lease]
    lease.touched = state.applied
    inst.lease = ev.lease
    lease.acquired += 1
    if ev.transitions > lease.transitions:
        lease.transitions = ev.transitions
    _set_holder(state, lease, ev.identity or ev.instance, ev)
    inst.role = "leader"
    waited = ms_to_ns(ev.waited_ms)
    bar_point(inst, "lease.acquired", ev.ts - waited, waited)


@handles(LeaseRenewed)
def _renewed(state: StateView, ev: LeaseRenewed, inst: InstanceRecord) -> None:
    lease = state.leases[ev.lease]
    lease.touched = state.applied
    identity = ev.identity or ev.instance
    if not inst.lease:
        inst.lease = ev.lease
    _set_holder(state, lease, identity, ev)
    holder = lease.holders[identity]
    holder.touched = state.applied
    holder.renews += 1
    holder.last_renew_ts = ev.ts
    latency = ev.latency_ms
    holder.last_latency_ms = latency
    if latency > holder.max_latency_ms:
        holder.max_latency_ms = latency
    lease.renew_latency.add(latency)
    lease.renew_history.append(
        {"ts": ev.ts, "holder": identity, "latency_ms": latency, "ok": True, "reason": ""}
    )


@handles(LeaseRenewFailed)
def _renew_failed(state: StateView, ev: LeaseRenewFailed, inst: InstanceRecord) -> None:
    lease = state.leases[ev.lease]
    lease.touched = state.applied
    identity = ev.identity or ev.instance
    bump(lease.failures, ev.reason)
    rec = lease.holders[identity]
    rec.touched = state.applied
    rec.failures += 1
    lease.renew_history.append(
        {
            "ts": ev.ts,
            "holder": identity,
            "latency_ms": ev.latency_ms,
            "ok": False,
            "reason": str(ev.reason),
        }
    )
    state.error(ev, f"renew {ev.lease} failed ({ev.reason}): {ev.error}")


@handles(LeaseReleased)
def _released(state: StateView, ev: LeaseReleased, inst: InstanceRecord) -> None:
    lease = state.leases[ev.lease]
    lease.touched = state.applied
    lease.released += 1
    if lease.holder == (ev.identity or ev.instance):
        _set_holder(state, lease, "", ev)
    if inst.role != "stopped":
        inst.role = "standby"


@handles(LeaseLost)
def _lost(state: StateView, ev: LeaseLost, inst: InstanceRecord) -> None:
    lease = state.leases[ev.lease]
    lease.touched = state.applied
    lease.lost += 1
    if inst.role != "stopped":
        inst.role = "standby"
    state.error(ev, f"lost {ev.lease}: {ev.reason}")


@handles(LeaderObserved)
def _leader_observed(state: StateView, ev: LeaderObserved, inst: InstanceRecord) -> None:
    lease = state.leases[ev.lease]
    lease.touched = state.applied
    if ev.transitions > lease.transitions:
        lease.transitions = ev.transitions
    if ev.lease_duration_s:
        lease.lease_duration_s = ev.lease_duration_s
    lease.skew_ms = ev.skew_ms
    if abs(ev.skew_ms) > lease.max_abs_skew_ms:
        lease.max_abs_skew_ms = abs(ev.skew_ms)
    _set_holder(state, lease, ev.new_holder, ev, old=ev.old_holder)


@handles(LeaseCandidateRenewed)
def _candidate_renewed(state: StateView, ev: LeaseCandidateRenewed, inst: InstanceRecord) -> None:
    lease = state.leases[ev.lease]
    lease.touched = state.applied
    name = text_key(ev.candidate.rpartition("/")[2] or ev.instance)
    candidate = lease.candidates[name]
    candidate.touched = state.applied
    candidate.binary_version = ev.binary_version
    candidate.emulation_version = ev.emulation_version
    candidate.strategy = ev.strategy
    candidate.renews += 1
    if ev.pinged:
        candidate.pings += 1
    candidate.last_renew_ts = ev.ts
    if not inst.lease:
        inst.lease = ev.lease


@handles(LeaseCoordinationObserved)
def _coordination_observed(
    state: StateView, ev: LeaseCoordinationObserved, inst: InstanceRecord
) -> None:
    lease = state.leases[ev.lease]
    lease.touched = state.applied
    lease.strategy = ev.strategy
    lease.preferred_holder = ev.preferred_holder
    if ev.holder:
        _set_holder(state, lease, ev.holder, ev)
