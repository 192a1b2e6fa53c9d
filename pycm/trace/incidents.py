"""Incident markers: a pure, bounded fold of events into the moments worth a mark on a timeline.

The dashboard's incident timeline shows, on one time axis, what went wrong or changed: lease
transitions, relists and 410s, dropped watches, bursts of errors and slow reconciles. This module
decides which events are such moments; it has no I/O and no clock (time is the events' ``ts``),
and carries names, keys and counts only — never an error's text, which may quote an object.

Types (the ``type`` of an :class:`Incident`):

============== ===============================================================================
``lease``       this instance acquired, lost or released a lease, or saw its holder change
``relist``      an informer decided to list again (``informer.relist``)
``expired``     a watch ended with 410 Gone / Expired (the resourceVersion left the window)
``watch_dropped`` a watch ended early: a transport/API error, the server closing it, too short
``error_burst`` at least ``burst_errors`` errors of one instance within ``burst_window_s``
``slow_reconcile`` a reconcile took at least ``slow_reconcile_ms``
``stuck_worker`` a worker held one key past --stuck-worker-threshold (``queue.stuck``, naming
                the controller, the key and the worker), and when it let the key go
``shard_move``  a member joined or left a sharding ring, or saw members gone from it (a
                Lease that expired: a killed member says nothing itself)
``shard_drain`` a member began waiting for in-flight keys it gives up, and when it gave them up
``shard_fenced`` a member's own Lease went unrenewed past the renew deadline, and when it
                renewed again
============== ===============================================================================

Bounds: the fold keeps the newest :data:`MAX_INCIDENTS`; an error burst is reported once until
the instance has been quiet for a window; slow reconciles of one controller are reported at
most once per :data:`SLOW_REPORT_INTERVAL_S` of event time (a storm is one mark, with a count).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pycm.trace.events import Event, Outcome
from pycm.trace.kinds import (
    ApiRequestCompleted,
    InformerRelisted,
    ItemDropped,
    LeaderObserved,
    LeaseAcquired,
    LeaseLost,
    LeaseReleased,
    ReconcileFinished,
    ShardDrainFinished,
    ShardDrainStarted,
    ShardMemberFenced,
    ShardMemberJoined,
    ShardMemberLeft,
    ShardMemberUnfenced,
    ShardViewChanged,
    WatchClosed,
    WatchCloseReason,
    WorkerStuck,
    WorkerUnstuck,
)

__all__ = [
    "DEFAULT_SLOW_RECONCILE_MS",
    "MAX_INCIDENTS",
    "Incident",
    "Incidents",
]

MAX_INCIDENTS = 500  # a timeline of the last minutes; a storm is coalesced before this
DEFAULT_SLOW_RECONCILE_MS = 1000.0
DEFAULT_BURST_ERRORS = 5
DEFAULT_BURST_WINDOW_S = 10.0
SLOW_REPORT_INTERVAL_S = 1.0
_NS = 1_000_000_000

# Watch ends that are not the normal end of a watch (timeout) nor a stop, nor a 410.
_DROPPED = frozenset(
    {WatchCloseReason.ERROR, WatchCloseReason.SERVER_CLOSED, WatchCloseReason.TOO_SHORT}
)


@dataclass(frozen=True, slots=True)
class Incident:
    ts: int  # Unix ns, the event's
    instance: str
    type: str
    text: str
    trace_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "ts": self.ts,
            "instance": self.instance,
            "type": self.type,
            "text": self.text,
            "trace_id": self.trace_id,
        }


class _Burst:
    """The recent error times of one instance. Invariant: ``times`` holds the ts of errors
    within one window of the newest, oldest first; ``open`` is True from a reported burst until
    a window passes with no error."""

    __slots__ = ("last_ts", "open", "times")

    def __init__(self) -> None:
        self.times: deque[int] = deque()
        self.open = False
        self.last_ts = 0


class Incidents:
    """Feed events with :meth:`apply`; it returns the incident an event makes, if any, and keeps
    the newest :data:`MAX_INCIDENTS` in :attr:`recent` (oldest first)."""

    def __init__(
        self,
        *,
        slow_reconcile_ms: float = DEFAULT_SLOW_RECONCILE_MS,
        burst_errors: int = DEFAULT_BURST_ERRORS,
        burst_window_s: float = DEFAULT_BURST_WINDOW_S,
        max_incidents: int = MAX_INCIDENTS,
    ) -> None:
        if burst_errors < 1 or burst_window_s <= 0 or slow_reconcile_ms <= 0:
            raise ValueError("burst_errors, burst_window_s and slow_reconcile_ms must be > 0")
        self.slow_reconcile_ns = int(slow_reconcile_ms * 1e6)
        self.burst_errors = burst_errors
        self.burst_window_ns = int(burst_window_s * _NS)
        self.recent: deque[Incident] = deque(maxlen=max_incidents)
        self._bursts: dict[str, _Burst] = {}
        # (instance, controller) -> (ts of the last slow mark, slow reconciles not yet marked)
        self._slow: dict[tuple[str, str], tuple[int, int]] = {}

    def apply(self, event: Event) -> Incident | None:
        incident = self._fold(event)
        if incident is not None:
            self.recent.append(incident)
        return incident

    def apply_all(self, events: Iterable[Event]) -> list[Incident]:
        out = []
        for event in events:
            incident = self.apply(event)
            if incident is not None:
                out.append(incident)
        return out

    def to_list(self) -> list[dict[str, Any]]:
        return [i.to_dict() for i in self.recent]

    # -- the fold -------------------------------------------------------------------------

    def _fold(self, ev: Event) -> Incident | None:
        if isinstance(ev, ReconcileFinished):
            burst = self._error(ev) if ev.outcome is Outcome.ERROR else None
            return burst or self._slow_reconcile(ev)
        if isinstance(ev, ApiRequestCompleted):
            return self._error(ev) if ev.code >= 500 or ev.code == 0 else None
        if isinstance(ev, ItemDropped):
            return self._error(ev)
        if isinstance(ev, WatchClosed):
            if ev.reason is WatchCloseReason.EXPIRED:
                return self._make(ev, "expired", f"{ev.resource}: watch expired (410)")
            if ev.reason in _DROPPED:
                reason = getattr(ev.reason, "value", ev.reason)
                return self._make(ev, "watch_dropped", f"{ev.resource}: watch dropped ({reason})")
            return None
        if isinstance(ev, InformerRelisted):
            why = f" ({ev.reason})" if ev.reason else ""
            return self._make(ev, "relist", f"{ev.resource}: relist{why}")
        if isinstance(ev, LeaseAcquired):
            return self._make(ev, "lease", f"{ev.identity or ev.instance} acquired {ev.lease}")
        if isinstance(ev, LeaseLost):
            why = f" ({ev.reason})" if ev.reason else ""
            return self._make(ev, "lease", f"{ev.identity or ev.instance} lost {ev.lease}{why}")
        if isinstance(ev, LeaseReleased):
            return self._make(ev, "lease", f"{ev.identity or ev.instance} released {ev.lease}")
        if isinstance(ev, WorkerStuck):
            return self._make(
                ev,
                "stuck_worker",
                f"{ev.controller}: worker {ev.worker} stuck on {ev.key} "
                f"for {ev.processing_s:.0f}s (threshold {ev.threshold_s:g}s)",
            )
        if isinstance(ev, WorkerUnstuck):
            return self._make(
                ev,
                "stuck_worker",
                f"{ev.controller}: worker {ev.worker} let {ev.key} go after {ev.processing_s:.0f}s",
            )
        if isinstance(ev, ShardMemberJoined | ShardMemberLeft | ShardDrainStarted):
            return self._shard_move(ev)
        if isinstance(ev, ShardDrainFinished | ShardMemberFenced | ShardMemberUnfenced):
            return self._shard_mark(ev)
        if isinstance(ev, ShardViewChanged):
            if not ev.left:
                return None  # joins are marked by the joiners themselves
            gone = ", ".join(m for m in ev.left.split(",") if m)
            return self._make(
                ev,
                "shard_move",
                f"{ev.member} sees {gone} gone from ring {ev.ring} ({ev.members} live)",
            )
        if isinstance(ev, LeaderObserved):
            old = ev.old_holder or "nobody"
            new = ev.new_holder or "nobody"
            return self._make(ev, "lease", f"{ev.lease}: holder {old} → {new}")
        return None

    def _shard_move(self, ev: ShardMemberJoined | ShardMemberLeft | ShardDrainStarted) -> Incident:
        if isinstance(ev, ShardMemberJoined):
            return self._make(ev, "shard_move", f"{ev.member} joined ring {ev.ring}")
        if isinstance(ev, ShardMemberLeft):
            return self._make(ev, "shard_move", f"{ev.member} left ring {ev.ring}")
        return self._make(
            ev,
            "shard_drain",
            f"{ev.member} drains {ev.share_dropped * 100:.1f}% of ring {ev.ring}: "
            f"waits for {ev.keys} key(s)",
        )

    def _shard_mark(
        self, ev: ShardDrainFinished | ShardMemberFenced | ShardMemberUnfenced
    ) -> Incident:
        if isinstance(ev, ShardDrainFinished):
            return self._make(
                ev,
                "shard_drain",
                f"{ev.member} gave up {ev.share_dropped * 100:.1f}% of ring {ev.ring} after "
                f"{ev.duration_ms:.0f}ms ({ev.keys} key(s) drained)",
            )
        if isinstance(ev, ShardMemberFenced):
            return self._make(
                ev,
                "shard_fenced",
                f"{ev.member} fenced in ring {ev.ring}: no renew within {ev.renew_deadline_s:g}s",
            )
        return self._make(
            ev, "shard_fenced", f"{ev.member} renewed in ring {ev.ring} after {ev.fenced_s:.1f}s"
        )

    @staticmethod
    def _make(ev: Event, type_: str, text: str) -> Incident:
        return Incident(ev.ts, ev.instance, type_, text, ev.trace_id)

    def _error(self, ev: Event) -> Incident | None:
        """Count an error of ``ev.instance``; an incident when it starts a burst."""
        burst = self._bursts.get(ev.instance)
        if burst is None:
            burst = self._bursts[ev.instance] = _Burst()
            if len(self._bursts) > 256:  # many instances: forget the quietest
                oldest = min(self._bursts, key=lambda k: self._bursts[k].last_ts)
                del self._bursts[oldest]
        ts = ev.ts
        window = self.burst_window_ns
        if burst.open and ts - burst.last_ts > window:
            burst.open = False  # a quiet window ended the previous burst
        burst.last_ts = max(burst.last_ts, ts)
        times = burst.times
        times.append(ts)
        while times and times[0] < ts - window:
            times.popleft()
        if len(times) > self.burst_errors:
            times.popleft()  # only the count up to the threshold matters
        if burst.open or len(times) < self.burst_errors:
            return None
        burst.open = True
        seconds = window / _NS
        return Incident(
            ts,
            ev.instance,
            "error_burst",
            f"{self.burst_errors} errors within {seconds:g}s (last: {ev.KIND})",
            ev.trace_id,
        )

    def _slow_reconcile(self, ev: ReconcileFinished) -> Incident | None:
        if ev.dur_ns < self.slow_reconcile_ns:
            return None
        key = (ev.instance, ev.controller)
        last_ts, unmarked = self._slow.get(key, (0, 0))
        if last_ts and ev.ts - last_ts < SLOW_REPORT_INTERVAL_S * _NS:
            self._slow[key] = (last_ts, unmarked + 1)
            return None
        if len(self._slow) > 1024 and key not in self._slow:
            self._slow.clear()  # a hostile stream of controller names: start over
        self._slow[key] = (ev.ts, 0)
        more = f" (+{unmarked} more since the last mark)" if unmarked else ""
        return Incident(
            ev.ts,
            ev.instance,
            "slow_reconcile",
            f"{ev.controller} {ev.key} took {ev.dur_ns / 1e6:.0f}ms{more}",
            ev.trace_id,
        )
