# Over 500 lines, one concept: the dashboard's one record per source.
"""The dashboard's data: one record per source (a replica, or a recording's instance), fed by
whatever reads the events, read by ``/api/state`` and broadcast to ``/api/stream``.

A :class:`Hub` is the sink every feed pushes into — :class:`pycm.trace.stream.StreamClient`
(``pycm dashboard --server``), the in-process bus (the dashboard mounted in ``pycm run``), a
recording (``--replay``) — with the three calls of the stream client's ``StreamSink``:
``push(source, events)``, ``push_snapshot(source, snapshot)`` and ``set_status(source,
status)``. Each source keeps, separately and labelled:

- the reducer's :class:`~pycm.trace.state.State` of that source (or, mounted, the manager's
  own state read through its ``snapshot`` function: the manager folds every event once);
- ``last_seq``, the seq of the newest event applied: an event at or below it is a duplicate and
  is dropped, so a reconnect that resumes with ``since=`` can never count an event twice;
- a ring of recent events (a new viewer's event log), the incidents
  (:mod:`pycm.trace.incidents`), its status, and ``series``: one sample a second of the
  charted numbers, the last 15 minutes.

A replica that restarts begins its seqs again from 1. The hub sees it as a snapshot or, without
one, a first event after a reconnect whose seq is not above ``last_seq`` (a resumed stream of
the same process only ever continues above it); the source then starts over from the new
process, and the hub broadcasts a fresh ``hello`` so every page resets too.

Work done per event: the dedupe check, the fold into the state and the incidents, the ring.
Everything for viewers is batched and done once, whatever their number: :meth:`Hub.flush`
(at most 4 times a second) encodes one ``events`` frame per source from what arrived since the
last one; :meth:`Hub.sample` (once a second) takes a snapshot per changed source for its series
and a ``snapshot`` frame. With no viewer connected, no frame is encoded, and a source whose
state lives in the manager is not even sampled (the manager pays nothing for an unwatched
dashboard but the fold of incidents).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from pycm.trace.codec import encode
from pycm.trace.events import Event
from pycm.trace.format import format_event
from pycm.trace.incidents import DEFAULT_SLOW_RECONCILE_MS, Incident, Incidents
from pycm.trace.state import State
from pycm.util.leasetiming import KUBE_DEFAULTS
from web.fanout import Broadcast, sse_frame

__all__ = [
    "FLUSH_INTERVAL_S",
    "RECENT_EVENTS",
    "SAMPLE_INTERVAL_S",
    "SERIES_LENGTH",
    "DashboardConfig",
    "Hub",
    "ReplayControl",
    "SourceRecord",
    "series_sample",
]

PROTOCOL_VERSION = 1
FLUSH_INTERVAL_S = 0.25  # events frames at most 4 times a second
SAMPLE_INTERVAL_S = 1.0  # snapshot frames and series samples at most once a second
SERIES_LENGTH = 15 * 60  # one sample a second, the last 15 minutes
RECENT_EVENTS = 500  # what a new viewer's event log starts with, per source
_MS = 1e-6


@dataclass(frozen=True, slots=True)
class DashboardConfig:
    """What the page needs to know and cannot learn from events."""

    jaeger_url: str | None = None
    slow_reconcile_ms: float = DEFAULT_SLOW_RECONCILE_MS

    def to_dict(self) -> dict[str, Any]:
        return {
            "jaeger_url": self.jaeger_url,
            # The lease gauge reads each lease's timings from its snapshot (folded from
            # lease.election_configured); these are for a recording without them, shown marked.
            "kube_defaults": {
                "lease_duration_s": KUBE_DEFAULTS.lease_duration,
                "renew_deadline_s": KUBE_DEFAULTS.renew_deadline,
                "retry_period_s": KUBE_DEFAULTS.retry_period,
            },
            "slow_reconcile_ms": self.slow_reconcile_ms,
        }


class ReplayControl(Protocol):
    """What ``POST /api/replay`` drives (the replay player)."""

    def info(self) -> dict[str, Any]:
        """``{"playing", "speed", "position_ts", "start_ts", "end_ts", "events"}``"""
        ...

    def play(self) -> None: ...

    def pause(self) -> None: ...

    def seek(self, seconds: float) -> None: ...

    def set_speed(self, speed: float) -> None: ...


def event_json(event: Event) -> bytes:
    """The codec's JSON object of ``event`` with its one-line form added as ``"line"``."""
    body = encode(event)
    return body[:-1] + b',"line":' + orjson.dumps(format_event(event)) + b"}"


def _status_json(status: Any) -> dict[str, str]:
    """``{"state", "reason"}`` of a stream client's SourceStatus (or anything shaped so)."""
    state = getattr(status, "state", status)
    state = getattr(state, "value", state)
    return {"state": str(state), "reason": str(getattr(status, "reason", "") or "")}


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _int(value: Any) -> int:
    """An integer field (ns timestamps: never through a float, which would round them)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, float) and value == value else 0


def _table(snapshot: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``{instance: {name: record}}`` of a snapshot, or {} when missing or malformed."""
    value = snapshot.get(name)
    return value if isinstance(value, dict) else {}


def series_sample(snapshot: Mapping[str, Any], ts: int) -> dict[str, Any]:
    """One series sample from a reducer snapshot (keys read defensively: the snapshot may come
    from another pycm version)."""
    queues = _table(snapshot, "queues")
    controllers: dict[str, dict[str, float]] = {}
    for instance, table in _table(snapshot, "controllers").items():
        if not isinstance(table, dict):
            continue
        for name, rec in table.items():
            if not isinstance(rec, dict):
                continue
            queue = (queues.get(instance) or {}).get(name) or {}
            latency = rec.get("latency") or {}
            has_latency = isinstance(latency, dict) and latency.get("count")
            controllers[f"{instance}/{name}"] = {
                "depth": _num(queue.get("depth")) if isinstance(queue, dict) else 0.0,
                "syncs_per_s": _num(rec.get("reconciles_per_s")),
                "p50_ms": _num(latency.get("p50")) if has_latency else 0.0,
                "p99_ms": _num(latency.get("p99")) if has_latency else 0.0,
                "errors": _num(rec.get("errors")),
                "retries": _num(queue.get("retries")) if isinstance(queue, dict) else 0.0,
            }
    informers: dict[str, dict[str, float]] = {}
    for instance, table in _table(snapshot, "informers").items():
        if not isinstance(table, dict):
            continue
        for resource, rec in table.items():
            if not isinstance(rec, dict):
                continue
            informers[f"{instance}/{resource}"] = {
                "objects": _num(rec.get("objects")),
                "events_per_s": _num(rec.get("watch_events_per_s")),
                "relists": _num(rec.get("relists")),
            }
    return {"ts": ts, "controllers": controllers, "informers": informers}


def _snapshot_span(snapshot: Mapping[str, Any]) -> tuple[int, int]:
    """(the largest ``last_seq``, the smallest ``first_ts``) over a snapshot's instances."""
    instances = snapshot.get("instances")
    if not isinstance(instances, dict):
        return 0, 0
    records = [i for i in instances.values() if isinstance(i, dict)]
    last_seq = max((_int(i.get("last_seq")) for i in records), default=0)
    first_ts = min((_int(i.get("first_ts")) for i in records), default=0)
    return last_seq, first_ts


class SourceRecord:
    """One source. Invariants: every event in ``recent`` and ``pending`` is in the state —
    applied, or held by an adopted snapshot; ``last_seq`` is the largest seq in the state since
    the source (re)started; ``logged_seq`` (≤ ``last_seq``) the largest seq put in ``recent``:
    an event between the two is one the adopted snapshot holds that the log has not shown yet;
    ``pending`` holds the events logged since the last flush, and stays empty while no viewer
    is connected."""

    def __init__(
        self,
        name: str,
        *,
        snapshot: Callable[[], Mapping[str, Any]] | None = None,
        objects: Callable[[], State | None] | None = None,
        slow_reconcile_ms: float = DEFAULT_SLOW_RECONCILE_MS,
    ) -> None:
        self.name = name
        self._external = snapshot  # the manager's own state (mounted), else ours
        self._external_objects = objects  # the manager's state, for object histories
        self.state: State | None = None if snapshot is not None else State()
        self.slow_reconcile_ms = slow_reconcile_ms
        self.incidents = Incidents(slow_reconcile_ms=slow_reconcile_ms)
        self.status: dict[str, str] = {"state": "connecting", "reason": ""}
        self.last_seq = 0
        self.logged_seq = 0
        self.restarts = 0  # times the source started over (a restarted replica, a seek back)
        self.duplicates = 0  # events dropped as already applied
        self.recent: deque[Event] = deque(maxlen=RECENT_EVENTS)
        self.pending: list[Event] = []
        self.series: deque[dict[str, Any]] = deque(maxlen=SERIES_LENGTH)
        self.applied = 0
        self.changed = False  # something applied since the last snapshot frame
        self._fresh_connection = False  # no event or snapshot yet since the last connect

    @property
    def samples_itself(self) -> bool:
        return self.state is not None

    def snapshot(self) -> Mapping[str, Any]:
        if self._external is not None:
            return self._external()
        assert self.state is not None
        return self.state.snapshot()

    def object_state(self) -> State | None:
        """The state holding this source's object histories (None: none is kept)."""
        if self._external is None:
            return self.state
        return self._external_objects() if self._external_objects is not None else None

    def start_over(self, state: State | None = None) -> None:
        """Forget what was applied (the source is a new process, or a replay went back)."""
        if self._external is None:
            self.state = state or State()
        self.incidents = Incidents(slow_reconcile_ms=self.slow_reconcile_ms)
        self.last_seq = 0
        self.logged_seq = 0
        self.recent.clear()
        self.pending.clear()
        self.series.clear()
        self.restarts += 1
        self.changed = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": dict(self.status),
            "snapshot": self.snapshot(),
            "series": list(self.series),
            "incidents": self.incidents.to_list(),
        }


class Hub:
    """Every source of one dashboard and its broadcast. ``mode`` is "live" (mounted in the
    manager), "fanin" (``pycm dashboard --server``) or "replay"."""

    def __init__(
        self,
        mode: str,
        config: DashboardConfig | None = None,
        *,
        broadcast: Broadcast | None = None,
        wall_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        if mode not in ("live", "fanin", "replay"):
            raise ValueError(f"unknown dashboard mode {mode!r}")
        self.mode = mode
        self.config = config or DashboardConfig()
        self.broadcast = broadcast or Broadcast()
        self.sources: dict[str, SourceRecord] = {}
        self.replay: ReplayControl | None = None
        self._wall_ns = wall_ns
        self._replay_info: dict[str, Any] | None = None
        self._need_hello = False

    # -- sources ---------------------------------------------------------------------------

    def add_source(
        self,
        name: str,
        *,
        snapshot: Callable[[], Mapping[str, Any]] | None = None,
        objects: Callable[[], State | None] | None = None,
    ) -> SourceRecord:
        """A new source named ``name``; with ``snapshot``, its state is read from there (the
        manager's reducer) instead of being folded here, and its object histories from
        ``objects`` (without it, the source shows none)."""
        if name in self.sources:
            raise ValueError(f"source {name!r} added twice")
        record = SourceRecord(
            name,
            snapshot=snapshot,
            objects=objects,
            slow_reconcile_ms=self.config.slow_reconcile_ms,
        )
        self.sources[name] = record
        return record

    def _source(self, name: str) -> SourceRecord:
        record = self.sources.get(name)
        return record if record is not None else self.add_source(name)

    # -- the StreamSink protocol -----------------------------------------------------------

    def push(self, source: str, events: Sequence[Event]) -> None:
        """Apply ``events`` (in seq order) of ``source``; those at or below its ``last_seq``
        are dropped as duplicates, unless the source has evidently restarted."""
        record = self._source(source)
        if not events:
            return
        if record._fresh_connection:
            record._fresh_connection = False
            first = next((e.seq for e in events if e.seq > 0), 0)
            if 0 < first <= record.last_seq:
                # A resumed stream of the same process only continues above last_seq.
                record.start_over()
                self._need_hello = True
        state = record.state
        fold = record.incidents.apply
        recent = record.recent.append
        watched = self.broadcast.viewers > 0
        pending = record.pending
        last_seq = record.last_seq
        logged_seq = record.logged_seq
        new_incidents: list[Incident] = []
        applied = 0
        for event in events:
            # An event without a seq (a lag notice, a hand-written recording) is never a
            # duplicate: there is nothing to compare.
            seq = event.seq
            if seq:
                if seq <= last_seq:
                    if seq <= logged_seq:
                        record.duplicates += 1
                        continue
                    # In the adopted snapshot already (a new process's start-up, delivered
                    # from its ring after the snapshot): logged and folded into incidents,
                    # not applied to the state twice.
                    logged_seq = seq
                else:
                    last_seq = logged_seq = seq
                    if state is not None:
                        state.apply(event)
            elif state is not None:
                state.apply(event)
            incident = fold(event)
            if incident is not None:
                new_incidents.append(incident)
            recent(event)
            if watched:
                pending.append(event)
            applied += 1
        record.last_seq = last_seq
        record.logged_seq = logged_seq
        if applied:
            record.applied += applied
            record.changed = True
        if watched:
            for incident in new_incidents:
                self.broadcast.publish(
                    sse_frame(
                        "incident",
                        orjson.dumps({"source": source, "incident": incident.to_dict()}),
                    )
                )

    def push_snapshot(self, source: str, snapshot: Mapping[str, Any]) -> None:
        """A manager's reducer snapshot, sent when a stream (re)connects. Adopted when the
        source has nothing yet, or when it shows the process restarted (its seqs are behind
        ours); otherwise ignored — the events that follow keep the state current, and the
        snapshot already holds the events a resumed stream backfills."""
        record = self._source(source)
        record._fresh_connection = False
        if record.state is None:
            return  # the state is the manager's own
        snap_seq, first_ts = _snapshot_span(snapshot)
        # A new process: its seqs are behind ours, or it started after the newest event we have.
        now_ts = record.state.now_ts
        restarted = record.applied > 0 and (snap_seq < record.last_seq or (0 < now_ts < first_ts))
        if record.applied > 0 and not restarted:
            return
        try:
            state = State.restore(dict(snapshot))
        except (TypeError, ValueError, KeyError, AttributeError):
            return  # not a snapshot this pycm can read: keep folding events
        if restarted:
            record.start_over(state)
            self._need_hello = True
        else:
            record.state = state
        record.last_seq = snap_seq
        record.applied += 1
        record.changed = True

    def set_status(self, source: str, status: Any) -> None:
        record = self._source(source)
        value = _status_json(status)
        if value["state"] == "connected" and record.status["state"] != "connected":
            record._fresh_connection = True
        if value == record.status:
            return
        record.status = value
        if self.broadcast.viewers:
            self.broadcast.publish(
                sse_frame("status", orjson.dumps({"source": source, "status": value}))
            )

    def reset(self, source: str) -> None:
        """Forget ``source``'s events (a replay seeking backwards); viewers get a new hello."""
        self._source(source).start_over()
        self._need_hello = True

    def object_states(self) -> dict[str, State | None]:
        """Each source's state with its object histories (web/objects.py reads them)."""
        return {name: record.object_state() for name, record in self.sources.items()}

    # -- what viewers get ------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The ``/api/state`` document (and the ``hello`` message)."""
        return {
            "v": PROTOCOL_VERSION,
            "mode": self.mode,
            "config": self.config.to_dict(),
            "sources": [record.to_dict() for record in self.sources.values()],
            "replay": self.replay.info() if self.replay is not None else None,
        }

    def hello_frame(self) -> bytes:
        return sse_frame("hello", orjson.dumps(self.state()))

    def backfill_frames(self) -> list[bytes]:
        """One ``events`` frame per source with its recent events (a new viewer's log)."""
        return [
            frame
            for record in self.sources.values()
            if (frame := self._events_frame(record.name, record.recent)) is not None
        ]

    @staticmethod
    def _events_frame(source: str, events: Iterable[Event]) -> bytes | None:
        encoded = [event_json(e) for e in events]
        if not encoded:
            return None
        last = 0
        for event in events:
            last = event.seq or last
        data = b'{"source":' + orjson.dumps(source) + b',"events":[' + b",".join(encoded) + b"]}"
        return sse_frame("events", data, id=f"{source}:{last}")

    def flush(self) -> None:
        """Broadcast what arrived since the last flush: a fresh ``hello`` when a source started
        over, else one ``events`` frame per source; and a changed replay position."""
        broadcast = self.broadcast
        if not broadcast.viewers:
            for record in self.sources.values():
                record.pending.clear()
            self._need_hello = False
            return
        if self._need_hello:
            self._need_hello = False
            for record in self.sources.values():
                record.pending.clear()
            broadcast.publish(self.hello_frame())
            for backfill in self.backfill_frames():
                broadcast.publish(backfill)
            return
        for record in self.sources.values():
            if record.pending:
                pending, record.pending = record.pending, []
                frame = self._events_frame(record.name, pending)
                if frame is not None:
                    broadcast.publish(frame)
        if self.replay is not None:
            info = self.replay.info()
            if info != self._replay_info:
                self._replay_info = info
                broadcast.publish(sse_frame("replay", orjson.dumps(info)))

    def sample(self) -> None:
        """Once a second: a series sample of every source whose state moved on, and, while
        someone watches, a ``snapshot`` frame of it. A source whose state is the manager's is
        sampled only while someone watches."""
        watched = self.broadcast.viewers > 0
        for record in self.sources.values():
            if not record.changed or not (watched or record.samples_itself):
                continue
            record.changed = False
            snapshot = record.snapshot()
            ts = _int(snapshot.get("now_ts")) or self._wall_ns()
            previous = record.series[-1] if record.series else None
            if previous is not None and previous["ts"] >= ts:
                sample = previous  # no newer event: the series needs no new point
            else:
                sample = series_sample(snapshot, ts)
                record.series.append(sample)
            if watched:
                data = orjson.dumps(
                    {
                        "source": record.name,
                        "snapshot": snapshot,
                        "sample": sample,
                    }
                )
                self.broadcast.publish(sse_frame("snapshot", data))

    async def run(self) -> None:
        """Flush 4 times a second and sample once a second, until cancelled."""
        loop = asyncio.get_running_loop()
        next_sample = loop.time()
        while True:
            self.flush()
            if loop.time() >= next_sample:
                next_sample = loop.time() + SAMPLE_INTERVAL_S
                self.sample()
            await asyncio.sleep(FLUSH_INTERVAL_S)
