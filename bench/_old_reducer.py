"""A frozen copy of the reducer as it was before the split into pycm/trace/state/ (issue 14):
the peer of ``trace.reduce`` in bench/trace.py, so the new State is measured against it in the
same run. Not used anywhere else; do not change it.

The original docstring follows.

The reducer: ``state.apply(event)`` folds any event stream into one snapshot.

TUI, web and tests use this one reducer; nothing re-derives state elsewhere. It is pure: no
I/O and no clock — time comes only from events' ``ts`` (rates are computed against the newest
ts seen). It accepts any stream (the live bus, SSE, a recording) and tolerates anything:

- unknown kinds (:class:`~pycm.trace.codec.UnknownEvent`) are counted by kind name;
- :class:`~pycm.trace.kinds.SubscriberLagged` adds its ``lost`` to ``counters.lost``;
- a step end without its begin (a viewer attached mid-step) is applied from the end alone;
  a begin without its end stays "in flight" (bounded; the oldest is evicted and counted);
  a begin arriving after its end (out-of-order merge) is not counted in flight;
- seq going backwards for an instance is counted (``counters.out_of_order``), never fatal;
- events of several instances (a viewer attached to three replicas) land in per-instance
  records.

Memory is bounded: it grows with distinct instances, leases, informers, controllers and queues
up to fixed caps (least recently touched evicted), and every history is a bounded ring.

``snapshot()`` returns plain JSON-able data (the SSE ``snapshot`` payload and
``GET /debug/pycm/state``); :meth:`State.restore` rebuilds a state from it that continues
exactly as the original would have (bounded windows included). Layout (field lists are the
records' in :mod:`pycm.trace.records`; times are Unix ns, ``*_ms`` milliseconds)::

    v, now_ts                       snapshot format version; the newest event ts seen
    counters                        applied, lost (sum of lag events' lost), lag_events,
                                    out_of_order, in_flight_evicted, malformed,
                                    unknown {kind: n}
    instances {name}                role (leader/standby/unknown/stopped), lease, first/last_ts,
                                    last_seq, events, version, exit_code, steps {bar name:
                                    start_ts, dur_ns, outcome ("" = running), error}, health
    leases {ns/name}                holder, transitions, changes, changes_last_hour,
                                    lease_duration_s, skew_ms, failures {reason: n},
                                    holders {identity: renews, failures, last_renew_ts, ...},
                                    history [ts, old, new, observer], renew_history
                                    [ts, holder, latency_ms, ok, reason], renew_latency (hist)
    informers {instance}{resource}  started, synced, objects, lists, watch_opens,
                                    watch_closes {reason: n}, relists, backoffs, last_error, ...
    controllers {instance}{name}    init, started, workers, reconciles, results {result: n},
                                    errors, in_flight, longest_running_ns, reconciles_per_s,
                                    latency (hist), slowest [key records], failing [...]
    queues {instance}{name}         depth, max_depth, adds, gets, dones, retries, drops,
                                    adds_per_s, wait (hist), work (hist)
    api {instance}                  requests, verbs, codes {2xx, 5xx, none, ...}, errors,
                                    rate_limiter_wait_ms, requests_per_s, latency (hist)
    in_flight                       total, by_step {step: n}, open [begin events, oldest
                                    first], ended_early [span ids]
    errors                          [ts, instance, kind, text, trace_id], oldest first

A histogram is ``{count, sum, min, max, buckets, p50, p90, p99}`` in ms
(:mod:`pycm.trace.histogram`); rates are per second over the last :data:`RATE_WINDOW_S`
seconds of event time, ending at ``now_ts``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from bench._old_records import (
    FAILING_KEYS,
    SLOWEST_KEYS,
    ApiRecord,
    ControllerRecord,
    HolderRecord,
    InformerRecord,
    InstanceRecord,
    KeyRecord,
    LeaseRecord,
    QueueRecord,
    StepRecord,
    bump,
    evict_least_recent,
)
from pycm.trace import codec
from pycm.trace.events import Event, Outcome, StepBegin, StepEnd
from pycm.trace.kinds import (
    AcquireResult,
    ApiRequestCompleted,
    ControllerDisabled,
    ControllerInitBegan,
    ControllerInitFinished,
    ControllerStarted,
    ControllerStopped,
    FlagsParsed,
    HandlerChainBuilt,
    HandlerLagged,
    HealthCheckChanged,
    InformerBackedOff,
    InformerListBegan,
    InformerListFinished,
    InformerRelisted,
    InformersStarted,
    InformerStarted,
    InformerSynced,
    ItemAdded,
    ItemDone,
    ItemDropped,
    ItemRequeued,
    ItemTaken,
    LeaderObserved,
    LeaseAcquireAttempted,
    LeaseAcquired,
    LeaseLost,
    LeaseReleased,
    LeaseRenewed,
    LeaseRenewFailed,
    ManagerStopped,
    QueueShutDown,
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
    ServingStarted,
    ServingStopped,
    StartupBegan,
    StartupFinished,
    SubscriberLagged,
    WatchClosed,
    WatchCloseReason,
    WatchOpened,
)

__all__ = ["SNAPSHOT_VERSION", "State"]

SNAPSHOT_VERSION = 1

# Caps. A viewer watches a handful of replicas; a manager runs tens of controllers, informers
# and queues. The caps are far above that and only stop a hostile or broken stream.
MAX_INSTANCES = 64
MAX_LEASES = 256  # `pycm lease watch` may observe every lease of a cluster
MAX_TABLE = 1024  # informers, controllers, queues (instance + name)
MAX_IN_FLIGHT = 4096  # open steps; beyond, the oldest begin is evicted
MAX_ENDED_EARLY = 1024  # ends seen before their begin (out-of-order merges)
MAX_ERRORS = 200
MAX_UNKNOWN_KINDS = 64
MAX_STEPS = 256  # start-up waterfall bars per instance
MAX_HEALTH = 64
MAX_HOLDERS = 16
RATE_WINDOW_S = 10  # the window of the rates in the snapshot
_HOUR_NS = 3600 * 1_000_000_000

_MS = 1e-6  # ns -> ms
# A duration from a (possibly hand-written or corrupt) event is bounded so that the arithmetic
# on it stays inside the signed 64-bit range every JSON encoder of a snapshot accepts.
_MAX_DURATION_NS = 2**53
_OK = Outcome.OK
_ERROR = Outcome.ERROR
_CODE_CLASS = {1: "1xx", 2: "2xx", 3: "3xx", 4: "4xx", 5: "5xx"}
_RESULTS = tuple(r.value for r in ReconcileResult)

Handler = Callable[[Any, InstanceRecord], None]


def _ms_to_ns(ms: float) -> int:
    """A duration in ms from an event as bounded, non-negative nanoseconds."""
    return int(min(max(ms, 0.0) * 1e6, _MAX_DURATION_NS))


def _label(step: StepBegin) -> str:
    """The name a step runs for (controller, resource), for in-flight listings."""
    for name in ("controller", "resource"):
        value = getattr(step, name, None)
        if isinstance(value, str):
            return value
    return ""


class State:
    """The folded state of an event stream. Feed with :meth:`apply`; read with :meth:`snapshot`.

    Invariants: every table is within its cap; ``open`` maps the span id of each begin whose end
    was not seen (at most :data:`MAX_IN_FLIGHT`, oldest first) to that begin; ``ended_early``
    holds span ids of ends seen without their begin (oldest first).
    """

    def __init__(self) -> None:
        self.applied = 0
        self.lost = 0
        self.lag_events = 0
        self.out_of_order = 0
        self.in_flight_evicted = 0
        self.malformed = 0
        self.unknown: dict[str, int] = {}
        self.now_ts = 0  # the newest event ts seen
        self.instances: dict[str, InstanceRecord] = {}
        self.leases: dict[str, LeaseRecord] = {}
        self.informers: dict[tuple[str, str], InformerRecord] = {}
        self.controllers: dict[tuple[str, str], ControllerRecord] = {}
        self.queues: dict[tuple[str, str], QueueRecord] = {}
        self.api: dict[str, ApiRecord] = {}
        self.open: dict[str, StepBegin] = {}
        self.ended_early: dict[str, None] = {}
        self.errors: deque[dict[str, Any]] = deque(maxlen=MAX_ERRORS)
        self._dispatch: dict[type, Handler] = {
            StartupBegan: self._startup_began,
            StartupFinished: self._startup_finished,
            FlagsParsed: self._flags_parsed,
            HandlerChainBuilt: self._handler_chain_built,
            ServingStarted: self._serving_started,
            ServingStopped: self._ignore,
            HealthCheckChanged: self._health_changed,
            ManagerStopped: self._manager_stopped,
            ControllerInitBegan: self._controller_init_began,
            ControllerInitFinished: self._controller_init_finished,
            ControllerDisabled: self._controller_disabled,
            ControllerStarted: self._controller_started,
            ControllerStopped: self._controller_stopped,
            ReconcileStarted: self._reconcile_started,
            ReconcileFinished: self._reconcile_finished,
            InformerStarted: self._informer_started,
            InformerListBegan: self._list_began,
            InformerListFinished: self._list_finished,
            WatchOpened: self._watch_opened,
            WatchClosed: self._watch_closed,
            InformerRelisted: self._relisted,
            InformerBackedOff: self._backed_off,
            InformerSynced: self._informer_synced,
            HandlerLagged: self._handler_lagged,
            InformersStarted: self._informers_started,
            ApiRequestCompleted: self._api_request,
            ItemAdded: self._item_added,
            ItemTaken: self._item_taken,
            ItemRequeued: self._item_requeued,
            ItemDropped: self._item_dropped,
            ItemDone: self._item_done,
            QueueShutDown: self._queue_shut_down,
            LeaseAcquireAttempted: self._acquire_attempted,
            LeaseAcquired: self._lease_acquired,
            LeaseRenewed: self._lease_renewed,
            LeaseRenewFailed: self._renew_failed,
            LeaseReleased: self._lease_released,
            LeaseLost: self._lease_lost,
            LeaderObserved: self._leader_observed,
            SubscriberLagged: self._lagged,
            codec.UnknownEvent: self._unknown,
        }

    # -----------------------------------------------------------------------------------------
    # Entry point
    # -----------------------------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Fold one event in, in any order. Never raises: an event whose attributes have the
        wrong types (a decoded, hand-edited recording) is counted in ``counters.malformed``."""
        n = self.applied = self.applied + 1
        ts = event.ts
        if ts.__class__ is not int or event.seq.__class__ is not int:
            self.malformed += 1
            return
        if event.instance.__class__ is not str:
            self.malformed += 1
            return
        if ts > self.now_ts:
            self.now_ts = ts
        inst = self.instances.get(event.instance)
        if inst is None:
            inst = self._new_instance(event.instance, ts)
        inst.touched = n
        inst.events += 1
        if ts > inst.last_ts:
            inst.last_ts = ts
        seq = event.seq
        if seq:
            if seq > inst.last_seq:
                inst.last_seq = seq
            else:
                self.out_of_order += 1
        handler = self._dispatch.get(type(event))
        if handler is None:
            handler = self._resolve(type(event))
        try:
            handler(event, inst)
        except (TypeError, ValueError, AttributeError):
            # A decoded event whose attributes have the wrong types (the codec does not check
            # them): count it and go on; the fields updated before the bad one stay updated.
            self.malformed += 1

    def apply_all(self, events: Any) -> None:
        """Apply every event of an iterable, in order."""
        apply = self.apply
        for event in events:
            apply(event)

    def _resolve(self, cls: type) -> Handler:
        """The handler of a kind without its own (a kind added after this reducer)."""
        handler: Handler
        if issubclass(cls, codec.UnknownEvent):
            handler = self._unknown
        elif issubclass(cls, StepBegin):
            handler = self._generic_begin
        elif issubclass(cls, StepEnd):
            handler = self._generic_end
        else:
            handler = self._ignore
        self._dispatch[cls] = handler
        return handler

    # -----------------------------------------------------------------------------------------
    # Tables
    # -----------------------------------------------------------------------------------------

    def _new_instance(self, name: str, ts: int) -> InstanceRecord:
        table = self.instances
        if len(table) >= MAX_INSTANCES:
            evict_least_recent(table)
        inst = table[name] = InstanceRecord(name=name, first_ts=ts)
        return inst

    def _lease(self, name: str) -> LeaseRecord:
        if name.__class__ is not str:
            raise TypeError("table names are strings")  # counted as malformed
        table = self.leases
        rec = table.get(name)
        if rec is None:
            if len(table) >= MAX_LEASES:
                evict_least_recent(table)
            rec = table[name] = LeaseRecord(name=name)
        rec.touched = self.applied
        return rec

    def _informer(self, instance: str, resource: str) -> InformerRecord:
        if resource.__class__ is not str:
            raise TypeError("table names are strings")  # counted as malformed
        key = (instance, resource)
        table = self.informers
        rec = table.get(key)
        if rec is None:
            if len(table) >= MAX_TABLE:
                evict_least_recent(table)
            rec = table[key] = InformerRecord(instance=instance, resource=resource)
        rec.touched = self.applied
        return rec

    def _controller(self, instance: str, controller: str) -> ControllerRecord:
        if controller.__class__ is not str:
            raise TypeError("table names are strings")  # counted as malformed
        key = (instance, controller)
        table = self.controllers
        rec = table.get(key)
        if rec is None:
            if len(table) >= MAX_TABLE:
                evict_least_recent(table)
            rec = table[key] = ControllerRecord(
                instance=instance, controller=controller, results=dict.fromkeys(_RESULTS, 0)
            )
        rec.touched = self.applied
        return rec

    def _queue(self, instance: str, queue: str) -> QueueRecord:
        if queue.__class__ is not str:
            raise TypeError("table names are strings")  # counted as malformed
        key = (instance, queue)
        table = self.queues
        rec = table.get(key)
        if rec is None:
            if len(table) >= MAX_TABLE:
                evict_least_recent(table)
            rec = table[key] = QueueRecord(instance=instance, queue=queue)
        rec.touched = self.applied
        return rec

    def _api_record(self, instance: str) -> ApiRecord:
        table = self.api
        rec = table.get(instance)
        if rec is None:
            if len(table) >= MAX_INSTANCES:
                evict_least_recent(table)
            rec = table[instance] = ApiRecord(instance=instance)
        rec.touched = self.applied
        return rec

    def _error(self, event: Event, text: str) -> None:
        self.errors.append(
            {
                "ts": event.ts,
                "instance": event.instance,
                "kind": event.KIND,
                "text": text,
                "trace_id": event.trace_id,
            }
        )

    # -----------------------------------------------------------------------------------------
    # Steps: in-flight tracking and the start-up waterfall
    # -----------------------------------------------------------------------------------------

    def _open_step(self, begin: StepBegin) -> None:
        sid = begin.span_id
        if not sid:
            return  # not pairable: a hand-made begin without a span
        if sid in self.ended_early:
            del self.ended_early[sid]  # its end came first (out-of-order merge)
            return
        open_ = self.open
        if sid in open_:
            return  # a duplicate (a replay overlapping a live stream)
        if len(open_) >= MAX_IN_FLIGHT:
            del open_[next(iter(open_))]
            self.in_flight_evicted += 1
        open_[sid] = begin

    def _close_step(self, end: StepEnd) -> StepBegin | None:
        sid = end.span_id
        if not sid:
            return None
        begin = self.open.pop(sid, None)
        if begin is None:
            early = self.ended_early
            if len(early) >= MAX_ENDED_EARLY:
                del early[next(iter(early))]
            early[sid] = None
        if end.outcome == _ERROR:
            self._error(end, end.error)
        return begin

    @staticmethod
    def _bar_begin(inst: InstanceRecord, name: str, ts: int) -> None:
        steps = inst.steps
        if name not in steps and len(steps) < MAX_STEPS:
            steps[name] = StepRecord(start_ts=ts)

    @staticmethod
    def _bar_end(inst: InstanceRecord, name: str, end: StepEnd) -> None:
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

    @staticmethod
    def _bar_point(inst: InstanceRecord, name: str, start_ts: int, dur_ns: int) -> None:
        steps = inst.steps
        if name not in steps and len(steps) < MAX_STEPS:
            steps[name] = StepRecord(start_ts=start_ts, dur_ns=dur_ns, outcome="ok")

    def _generic_begin(self, ev: StepBegin, inst: InstanceRecord) -> None:
        self._open_step(ev)

    def _generic_end(self, ev: StepEnd, inst: InstanceRecord) -> None:
        self._close_step(ev)

    def _ignore(self, ev: Event, inst: InstanceRecord) -> None:
        pass

    # -----------------------------------------------------------------------------------------
    # Start-up, serving, health
    # -----------------------------------------------------------------------------------------

    def _startup_began(self, ev: StartupBegan, inst: InstanceRecord) -> None:
        self._open_step(ev)
        previous = inst.steps.get("startup")
        if previous is not None and previous.outcome:
            inst.steps.clear()  # a new run of this instance
            inst.exit_code = None
            inst.stop_reason = ""
            inst.role = "unknown"
        inst.command = ev.command
        inst.version = ev.version
        self._bar_begin(inst, "startup", ev.ts)

    def _startup_finished(self, ev: StartupFinished, inst: InstanceRecord) -> None:
        self._close_step(ev)
        self._bar_end(inst, "startup", ev)

    def _flags_parsed(self, ev: FlagsParsed, inst: InstanceRecord) -> None:
        self._bar_point(inst, "flags.parsed", ev.ts - ev.dur_ns, ev.dur_ns)

    def _handler_chain_built(self, ev: HandlerChainBuilt, inst: InstanceRecord) -> None:
        self._bar_point(inst, "server.handler_chain_built", ev.ts - ev.dur_ns, ev.dur_ns)

    def _serving_started(self, ev: ServingStarted, inst: InstanceRecord) -> None:
        name = f"server.serving_started/{ev.address}:{ev.port}"
        self._bar_point(inst, name, ev.ts - ev.dur_ns, ev.dur_ns)

    def _health_changed(self, ev: HealthCheckChanged, inst: InstanceRecord) -> None:
        health = inst.health
        if ev.check.__class__ is not str:
            raise TypeError("check names are strings")
        if ev.check in health or len(health) < MAX_HEALTH:
            health[ev.check] = {"healthy": ev.healthy, "reason": ev.reason, "ts": ev.ts}

    def _manager_stopped(self, ev: ManagerStopped, inst: InstanceRecord) -> None:
        inst.role = "stopped"
        inst.exit_code = ev.exit_code
        inst.stop_reason = ev.reason
        if ev.exit_code:
            self._error(ev, f"manager stopped (exit {ev.exit_code}): {ev.reason}")

    # -----------------------------------------------------------------------------------------
    # Controllers and reconciles
    # -----------------------------------------------------------------------------------------

    def _controller_init_began(self, ev: ControllerInitBegan, inst: InstanceRecord) -> None:
        self._open_step(ev)
        self._controller(ev.instance, ev.controller).init = "running"
        self._bar_begin(inst, f"controller.init/{ev.controller}", ev.ts)

    def _controller_init_finished(self, ev: ControllerInitFinished, inst: InstanceRecord) -> None:
        self._close_step(ev)
        rec = self._controller(ev.instance, ev.controller)
        if ev.outcome != _OK:
            rec.init = str(ev.outcome)
        else:
            rec.init = "started" if ev.started else "not_started"
        rec.init_reason = ev.reason or ev.error
        rec.init_ms = ev.dur_ns * _MS
        self._bar_end(inst, f"controller.init/{ev.controller}", ev)

    def _controller_disabled(self, ev: ControllerDisabled, inst: InstanceRecord) -> None:
        rec = self._controller(ev.instance, ev.controller)
        rec.disabled = True
        rec.disabled_reason = ev.reason

    def _controller_started(self, ev: ControllerStarted, inst: InstanceRecord) -> None:
        rec = self._controller(ev.instance, ev.controller)
        rec.started = True
        rec.stopped = False
        rec.workers = ev.workers

    def _controller_stopped(self, ev: ControllerStopped, inst: InstanceRecord) -> None:
        self._controller(ev.instance, ev.controller).stopped = True

    def _reconcile_started(self, ev: ReconcileStarted, inst: InstanceRecord) -> None:
        self._open_step(ev)
        self._controller(ev.instance, ev.controller)  # in flight is counted per controller

    def _reconcile_finished(self, ev: ReconcileFinished, inst: InstanceRecord) -> None:
        self._close_step(ev)
        rec = self._controller(ev.instance, ev.controller)
        outcome = ev.outcome
        # A sync that raised ends with outcome error and the default result: count it as the
        # error it is (the worker rate-limits the key); a cancelled one as "cancelled".
        result: str = ev.result
        failed = outcome != _OK
        if failed:
            if result == ReconcileResult.SUCCESS:
                result = "error" if outcome == _ERROR else str(outcome)
        elif result == ReconcileResult.ERROR:
            failed = True
        rec.reconciles += 1
        bump(rec.results, result)
        ts = ev.ts
        if ts > rec.last_ts:
            rec.last_ts = ts
        dur = ev.dur_ns
        rec.latency.add(dur * _MS)
        rec.rate.add(ts)
        key = ev.key
        if failed:
            rec.errors += 1
            failing = rec.failing
            entry = failing.pop(key, None)
            if entry is None:
                entry = KeyRecord(key=key, count=0)
            self._fill_key(entry, ev, result)
            entry.count += 1
            failing[key] = entry
            if len(failing) > FAILING_KEYS:
                del failing[next(iter(failing))]
            if outcome == _OK:  # an error result without an error outcome: not yet in the ring
                self._error(ev, f"{ev.controller} {key}: {result}")
        slowest = rec.slowest
        entry = slowest.get(key)
        if entry is not None:
            if dur > entry.dur_ns:
                self._fill_key(entry, ev, result)
                if len(slowest) >= SLOWEST_KEYS:
                    rec.slow_floor = min(r.dur_ns for r in slowest.values())
        elif len(slowest) < SLOWEST_KEYS or dur > rec.slow_floor:
            if len(slowest) >= SLOWEST_KEYS:
                victim = min(slowest, key=lambda k: slowest[k].dur_ns)
                del slowest[victim]
            entry = slowest[key] = KeyRecord(key=key)
            self._fill_key(entry, ev, result)
            if len(slowest) >= SLOWEST_KEYS:
                rec.slow_floor = min(r.dur_ns for r in slowest.values())

    @staticmethod
    def _fill_key(entry: KeyRecord, ev: ReconcileFinished, result: str) -> None:
        entry.ts = ev.ts
        entry.dur_ns = ev.dur_ns
        entry.result = result
        entry.outcome = str(ev.outcome)
        entry.error = ev.error
        entry.action = ev.action
        entry.trace_id = ev.trace_id
        entry.span_id = ev.span_id
        entry.retries = ev.retries
        entry.api_calls = ev.api_calls

    # -----------------------------------------------------------------------------------------
    # Informers
    # -----------------------------------------------------------------------------------------

    def _informer_started(self, ev: InformerStarted, inst: InstanceRecord) -> None:
        rec = self._informer(ev.instance, ev.resource)
        rec.started = True
        rec.metadata_only = ev.metadata_only
        rec.resync_s = ev.resync_s

    def _list_began(self, ev: InformerListBegan, inst: InstanceRecord) -> None:
        self._open_step(ev)
        self._informer(ev.instance, ev.resource)
        self._bar_begin(inst, f"informer.list/{ev.resource}", ev.ts)

    def _list_finished(self, ev: InformerListFinished, inst: InstanceRecord) -> None:
        self._close_step(ev)
        rec = self._informer(ev.instance, ev.resource)
        rec.lists += 1
        rec.list_ms = ev.dur_ns * _MS
        if ev.outcome != _OK:
            rec.list_errors += 1
            if ev.outcome == _ERROR:
                rec.last_error = ev.error
                rec.last_error_ts = ev.ts
        else:
            rec.list_items = rec.objects = ev.items
            rec.list_bytes = ev.bytes
            rec.list_pages = ev.pages
            if ev.resource_version:
                rec.resource_version = ev.resource_version
        self._bar_end(inst, f"informer.list/{ev.resource}", ev)

    def _watch_opened(self, ev: WatchOpened, inst: InstanceRecord) -> None:
        rec = self._informer(ev.instance, ev.resource)
        rec.watch_opens += 1
        if ev.resource_version:
            rec.resource_version = ev.resource_version

    def _watch_closed(self, ev: WatchClosed, inst: InstanceRecord) -> None:
        rec = self._informer(ev.instance, ev.resource)
        bump(rec.watch_closes, ev.reason)
        rec.watch_events += ev.events
        if ev.resource_version:
            rec.resource_version = ev.resource_version
        if ev.reason == WatchCloseReason.ERROR:
            rec.last_error = ev.error
            rec.last_error_ts = ev.ts
            self._error(ev, f"watch {ev.resource} closed: {ev.error}")

    def _relisted(self, ev: InformerRelisted, inst: InstanceRecord) -> None:
        rec = self._informer(ev.instance, ev.resource)
        rec.relists += 1
        bump(rec.relist_reasons, ev.reason)

    def _backed_off(self, ev: InformerBackedOff, inst: InstanceRecord) -> None:
        rec = self._informer(ev.instance, ev.resource)
        rec.backoffs += 1
        rec.last_backoff_ms = ev.delay_ms

    def _informer_synced(self, ev: InformerSynced, inst: InstanceRecord) -> None:
        rec = self._informer(ev.instance, ev.resource)
        rec.synced = True
        rec.synced_ts = ev.ts
        rec.objects = ev.objects
        rec.sync_duration_ms = ev.duration_ms
        dur_ns = _ms_to_ns(ev.duration_ms)
        self._bar_point(inst, f"informer.synced/{ev.resource}", ev.ts - dur_ns, dur_ns)

    def _handler_lagged(self, ev: HandlerLagged, inst: InstanceRecord) -> None:
        self._informer(ev.instance, ev.resource).handler_lost += ev.lost
        self._error(ev, f"{ev.resource} handler {ev.handler} lost {ev.lost} notifications")

    def _informers_started(self, ev: InformersStarted, inst: InstanceRecord) -> None:
        self._bar_point(inst, "informers.started", ev.ts, 0)

    # -----------------------------------------------------------------------------------------
    # API requests
    # -----------------------------------------------------------------------------------------

    def _api_request(self, ev: ApiRequestCompleted, inst: InstanceRecord) -> None:
        rec = self._api_record(ev.instance)
        rec.requests += 1
        bump(rec.verbs, ev.verb)
        code = ev.code
        bump(rec.codes, _CODE_CLASS.get(code // 100, "other") if code else "none")
        rec.latency.add(ev.dur_ns * _MS)
        rec.rate.add(ev.ts)
        rec.rate_limiter_wait_ms += ev.rate_limiter_wait_ms
        rec.retries += ev.retries
        rec.bytes += ev.bytes
        if code >= 500 or code == 0:
            rec.errors += 1
            self._error(ev, f"{ev.verb} {ev.resource} {code or 'no response'}: {ev.error}")

    # -----------------------------------------------------------------------------------------
    # Work queues
    # -----------------------------------------------------------------------------------------

    @staticmethod
    def _depth(rec: QueueRecord, ts: int, depth: int) -> None:
        if ts >= rec.depth_ts:
            rec.depth = depth
            rec.depth_ts = ts
        if depth > rec.max_depth:
            rec.max_depth = depth

    def _item_added(self, ev: ItemAdded, inst: InstanceRecord) -> None:
        rec = self._queue(ev.instance, ev.queue)
        rec.adds += 1
        if not ev.queued:
            rec.deduped += 1
        rec.add_rate.add(ev.ts)
        self._depth(rec, ev.ts, ev.depth)

    def _item_taken(self, ev: ItemTaken, inst: InstanceRecord) -> None:
        rec = self._queue(ev.instance, ev.queue)
        rec.gets += 1
        rec.wait.add(ev.wait_ms)
        self._depth(rec, ev.ts, ev.depth)

    def _item_done(self, ev: ItemDone, inst: InstanceRecord) -> None:
        rec = self._queue(ev.instance, ev.queue)
        rec.dones += 1
        rec.work.add(ev.work_ms)
        self._depth(rec, ev.ts, ev.depth)

    def _item_requeued(self, ev: ItemRequeued, inst: InstanceRecord) -> None:
        self._queue(ev.instance, ev.queue).retries += 1

    def _item_dropped(self, ev: ItemDropped, inst: InstanceRecord) -> None:
        rec = self._queue(ev.instance, ev.queue)
        rec.drops += 1
        bump(rec.drop_reasons, ev.reason)
        self._error(ev, f"{ev.queue} dropped {ev.key} after {ev.retries} retries: {ev.reason}")

    def _queue_shut_down(self, ev: QueueShutDown, inst: InstanceRecord) -> None:
        self._queue(ev.instance, ev.queue).shut_down = True

    # -----------------------------------------------------------------------------------------
    # Leases and roles
    # -----------------------------------------------------------------------------------------

    def _set_holder(self, lease: LeaseRecord, new: str, ev: Event, old: str | None = None) -> None:
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
        for inst in self.instances.values():
            if inst.lease == lease.name and inst.role != "stopped":
                inst.role = "leader" if inst.name == new else "standby"

    def _holder(self, lease: LeaseRecord, identity: str) -> HolderRecord:
        holders = lease.holders
        rec = holders.get(identity)
        if rec is None:
            if len(holders) >= MAX_HOLDERS:
                evict_least_recent(holders)
            rec = holders[identity] = HolderRecord()
        rec.touched = self.applied
        return rec

    def _acquire_attempted(self, ev: LeaseAcquireAttempted, inst: InstanceRecord) -> None:
        lease = self._lease(ev.lease)
        inst.lease = ev.lease
        bump(lease.attempts, ev.result)
        if ev.result == AcquireResult.ERROR:
            self._error(ev, f"acquire {ev.lease}: {ev.error}")
        if ev.result in (AcquireResult.ACQUIRED, AcquireResult.CREATED):
            self._set_holder(lease, ev.identity or ev.instance, ev)
            inst.role = "leader"
            return
        if ev.holder:
            self._set_holder(lease, ev.holder, ev)
        if inst.role != "stopped":
            inst.role = "standby"

    def _lease_acquired(self, ev: LeaseAcquired, inst: InstanceRecord) -> None:
        lease = self._lease(ev.lease)
        inst.lease = ev.lease
        lease.acquired += 1
        if ev.transitions > lease.transitions:
            lease.transitions = ev.transitions
        self._set_holder(lease, ev.identity or ev.instance, ev)
        inst.role = "leader"
        waited = _ms_to_ns(ev.waited_ms)
        self._bar_point(inst, "lease.acquired", ev.ts - waited, waited)

    def _lease_renewed(self, ev: LeaseRenewed, inst: InstanceRecord) -> None:
        lease = self._lease(ev.lease)
        identity = ev.identity or ev.instance
        if not inst.lease:
            inst.lease = ev.lease
        self._set_holder(lease, identity, ev)
        holder = self._holder(lease, identity)
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

    def _renew_failed(self, ev: LeaseRenewFailed, inst: InstanceRecord) -> None:
        lease = self._lease(ev.lease)
        identity = ev.identity or ev.instance
        bump(lease.failures, ev.reason)
        self._holder(lease, identity).failures += 1
        lease.renew_history.append(
            {
                "ts": ev.ts,
                "holder": identity,
                "latency_ms": ev.latency_ms,
                "ok": False,
                "reason": str(ev.reason),
            }
        )
        self._error(ev, f"renew {ev.lease} failed ({ev.reason}): {ev.error}")

    def _lease_released(self, ev: LeaseReleased, inst: InstanceRecord) -> None:
        lease = self._lease(ev.lease)
        lease.released += 1
        if lease.holder == (ev.identity or ev.instance):
            self._set_holder(lease, "", ev)
        if inst.role != "stopped":
            inst.role = "standby"

    def _lease_lost(self, ev: LeaseLost, inst: InstanceRecord) -> None:
        lease = self._lease(ev.lease)
        lease.lost += 1
        if inst.role != "stopped":
            inst.role = "standby"
        self._error(ev, f"lost {ev.lease}: {ev.reason}")

    def _leader_observed(self, ev: LeaderObserved, inst: InstanceRecord) -> None:
        lease = self._lease(ev.lease)
        if ev.transitions > lease.transitions:
            lease.transitions = ev.transitions
        if ev.lease_duration_s:
            lease.lease_duration_s = ev.lease_duration_s
        lease.skew_ms = ev.skew_ms
        if abs(ev.skew_ms) > lease.max_abs_skew_ms:
            lease.max_abs_skew_ms = abs(ev.skew_ms)
        self._set_holder(lease, ev.new_holder, ev, old=ev.old_holder)

    # -----------------------------------------------------------------------------------------
    # The bus, unknown kinds
    # -----------------------------------------------------------------------------------------

    def _lagged(self, ev: SubscriberLagged, inst: InstanceRecord) -> None:
        self.lag_events += 1
        self.lost += ev.lost

    def _unknown(self, ev: codec.UnknownEvent, inst: InstanceRecord) -> None:
        name = ev.kind
        unknown = self.unknown
        if name in unknown or len(unknown) < MAX_UNKNOWN_KINDS:
            unknown[name] = unknown.get(name, 0) + 1
        else:
            unknown["(other)"] = unknown.get("(other)", 0) + 1

    # -----------------------------------------------------------------------------------------
    # Snapshot and restore
    # -----------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain JSON-able data, with derived views (rates, in flight)."""
        now = self.now_ts
        flight: dict[tuple[str, str], list[int]] = {}  # (instance, controller) -> [n, oldest]
        by_step: dict[str, int] = {}
        for begin in self.open.values():
            by_step[begin.STEP] = by_step.get(begin.STEP, 0) + 1
            if isinstance(begin, ReconcileStarted):
                slot = flight.setdefault((begin.instance, begin.controller), [0, begin.ts])
                slot[0] += 1
                slot[1] = min(slot[1], begin.ts)

        controllers: dict[str, dict[str, Any]] = {}
        for (instance, name), c in self.controllers.items():
            d = c.dump()
            n, oldest = flight.get((instance, name), (0, 0))
            d["in_flight"] = n
            d["longest_running_ns"] = now - oldest if n else 0
            d["reconciles_per_s"] = c.rate.rate(now, RATE_WINDOW_S)
            controllers.setdefault(instance, {})[name] = d
        queues: dict[str, dict[str, Any]] = {}
        for (instance, name), q in self.queues.items():
            d = q.dump()
            d["adds_per_s"] = q.add_rate.rate(now, RATE_WINDOW_S)
            queues.setdefault(instance, {})[name] = d
        informers: dict[str, dict[str, Any]] = {}
        for (instance, name), i in self.informers.items():
            informers.setdefault(instance, {})[name] = i.dump()
        api = {}
        for name, a in self.api.items():
            d = a.dump()
            d["requests_per_s"] = a.rate.rate(now, RATE_WINDOW_S)
            api[name] = d
        leases = {}
        for name, lease in self.leases.items():
            d = lease.dump()
            d["changes_last_hour"] = sum(1 for h in lease.history if h["ts"] > now - _HOUR_NS)
            leases[name] = d
        return {
            "v": SNAPSHOT_VERSION,
            "now_ts": now,
            "counters": {
                "applied": self.applied,
                "lost": self.lost,
                "lag_events": self.lag_events,
                "out_of_order": self.out_of_order,
                "in_flight_evicted": self.in_flight_evicted,
                "malformed": self.malformed,
                "unknown": dict(self.unknown),
            },
            "instances": {name: i.dump() for name, i in self.instances.items()},
            "leases": leases,
            "informers": informers,
            "controllers": controllers,
            "queues": queues,
            "api": api,
            "in_flight": {
                "total": len(self.open),
                "by_step": by_step,
                "open": [codec.to_dict(b) for b in self.open.values()],
                "ended_early": list(self.ended_early),
            },
            "errors": [dict(e) for e in self.errors],
        }

    @classmethod
    def restore(cls, snapshot: dict[str, Any]) -> State:
        """A state that continues exactly where the one that took ``snapshot`` was."""
        state = cls()
        counters = snapshot.get("counters", {})
        state.applied = int(counters.get("applied", 0))
        state.lost = int(counters.get("lost", 0))
        state.lag_events = int(counters.get("lag_events", 0))
        state.out_of_order = int(counters.get("out_of_order", 0))
        state.in_flight_evicted = int(counters.get("in_flight_evicted", 0))
        state.malformed = int(counters.get("malformed", 0))
        state.unknown = dict(counters.get("unknown", {}))
        state.now_ts = int(snapshot.get("now_ts", 0))
        state.instances = {
            k: InstanceRecord.load(v) for k, v in snapshot.get("instances", {}).items()
        }
        state.leases = {k: LeaseRecord.load(v) for k, v in snapshot.get("leases", {}).items()}
        for instance, table in snapshot.get("informers", {}).items():
            for name, d in table.items():
                state.informers[(instance, name)] = InformerRecord.load(d)
        for instance, table in snapshot.get("controllers", {}).items():
            for name, d in table.items():
                state.controllers[(instance, name)] = ControllerRecord.load(d)
        for instance, table in snapshot.get("queues", {}).items():
            for name, d in table.items():
                state.queues[(instance, name)] = QueueRecord.load(d)
        state.api = {k: ApiRecord.load(v) for k, v in snapshot.get("api", {}).items()}
        flight = snapshot.get("in_flight", {})
        for d in flight.get("open", ()):
            try:
                begin = codec.from_dict(d)
            except codec.CodecError:
                continue
            if isinstance(begin, StepBegin) and begin.span_id:
                state.open[begin.span_id] = begin
        state.ended_early = dict.fromkeys(flight.get("ended_early", ()))
        state.errors.extend(dict(e) for e in snapshot.get("errors", ()))
        return state

    from_snapshot = restore
