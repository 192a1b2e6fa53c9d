"""The worker loop: a named queue and its workers around a sync handler.

Event handlers only compute keys and call :meth:`Controller.enqueue`; workers take keys off
the rate-limiting queue, pass the gates (:mod:`pycm.controller.gates`: the leader elector's,
a shard's) and run the sync handler. What happens next is the reconcile contract
(:mod:`pycm.controller.reconcile`): the plain success is handled here, inline (the hot path),
every other end by :class:`~pycm.controller.outcomes.OutcomeHandler`.

Each sync is one traced step (``reconcile.begin`` / ``reconcile.end``), the root of a trace of its
own: the key, the queue wait, the retries so far, the informer event that enqueued it
(:class:`Trigger`, the span link), and the outcome.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pycm.api.diff import changed_paths
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.controller.bound_metrics import BoundMetrics
from pycm.controller.gates import KeyGate, ReconcileGate
from pycm.controller.metrics import ControllerMetrics
from pycm.controller.outcomes import OutcomeHandler, SpanToken
from pycm.controller.reconcile import (
    DEFAULT_MAX_RETRIES,
    Result,
    SyncHandler,
    TerminalError,
)
from pycm.sharding.gate import KeyAdmission
from pycm.trace.bus import Bus, default_bus
from pycm.trace.causes import Trigger
from pycm.trace.context import get_span, reset_span, root_context, set_span
from pycm.trace.kinds import (
    ControllerStarted,
    ControllerStopped,
    ItemDropped,
    ReconcileResult,
)
from pycm.trace.reconciles import ReconcileRecorder
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.tasks import cancel_and_wait
from pycm.workqueue.priority_queue import DEFAULT_PRIORITY, LOW_PRIORITY, PriorityQueue
from pycm.workqueue.queue import ShutDown
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue

# (DEFAULT_MAX_RETRIES, KeyGate, ReconcileGate, Result, SyncHandler and TerminalError live in
# modules of their own, pycm.controller.reconcile and .gates; imported from here they work.)
__all__ = [
    "DEFAULT_MAX_RETRIES",
    "Controller",
    "KeyGate",
    "ReconcileGate",
    "Result",
    "SyncHandler",
    "TerminalError",
    "Trigger",
]

log = logging.getLogger(__name__)

# The triggers a priority queue takes at LOW_PRIORITY: an add from the informer's initial list
# and an update whose resourceVersion did not change (a resync). Nothing changed in either, so
# a key that did change goes first (controller-runtime's WithLowPriorityWhenUnchanged).
_LOW_PRIORITY_EVENTS = frozenset({"initial", "resync"})

# The enum members process() uses, bound once: reading one off its class goes through
# EnumType.__getattr__ in Python 3.11 (~0.9k instructions, a tenth of a no-op sync's tracing).
_SUCCESS = ReconcileResult.SUCCESS


class Controller:
    """A named queue and its workers around a sync handler."""

    def __init__(
        self,
        name: str,
        sync: SyncHandler,
        *,
        resource: str = "",
        queue: RateLimitingQueue[str] | None = None,
        max_retries: int | None = DEFAULT_MAX_RETRIES,
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        metrics: ControllerMetrics | None = None,
        stop_timeout: float = 10.0,
        priority_queue: bool = False,
    ) -> None:
        self.name = name
        self.sync = sync
        self.resource = resource
        self._bus = bus or default_bus()
        self._clock = clock
        # Each reconcile's trace: its begin and end records (process()).
        self._recorder = ReconcileRecorder(self._bus, name, resource)
        # (Not `queue or ...`: an empty queue is falsy, and a given queue is always empty.)
        # priority_queue: a PriorityQueue when no queue is given.
        queue_class = PriorityQueue if priority_queue else RateLimitingQueue
        self.queue: RateLimitingQueue[str] = (
            queue
            if queue is not None
            else queue_class(
                name, clock=clock, bus=self._bus, metrics=metrics.queue if metrics else None
            )
        )
        # The same queue when it is a priority queue (its adds take a priority), else None.
        self._pq: PriorityQueue[str] | None = (
            self.queue if isinstance(self.queue, PriorityQueue) else None
        )
        self._queue_metrics = metrics.queue if metrics is not None else None
        # None: retry for ever (capped backoff); else drop a key after this many retries.
        self.max_retries = max_retries
        self._metrics = metrics
        # The labelled children every reconcile touches, looked up once (a labels() call is a
        # lock and a dict lookup per metric per reconcile); results by outcome, on first use.
        self._bound: BoundMetrics | None = (
            BoundMetrics(metrics, name) if metrics is not None else None
        )
        self._stop_timeout = stop_timeout
        # The newest trigger per key waiting in the queue (a burst of events for one key is one
        # reconcile; it links to the last of them).
        self._triggers: dict[str, Trigger] = {}
        # The cause of each key's pending delayed add (a retry's backoff, a requeue_after): the
        # trigger of a reconcile that finds no other (outcomes.OutcomeHandler.requeued_by).
        self._requeues: dict[str, Trigger] = {}
        # Monotonic time a worker last took or finished a key (or the controller started):
        # the queue-progress health check compares it with the queue's backlog.
        self.last_progress = clock.monotonic()
        self.running = False
        # Leader-elected: set before the workers start; None runs ungated.
        self.gate: ReconcileGate | None = None
        # Sharded: asked before each key (after the gate); None takes every key.
        self.key_gate: KeyGate | None = None
        # The informers a ControllerBuilder wired it to (None / (): built otherwise): its
        # primary one caches the objects its keys name (a uid-sharded member reads a key's uid
        # there), ``watched`` is every one it reads, the primary included.
        self.primary: SharedIndexInformer | None = None
        self.watched: tuple[SharedIndexInformer, ...] = ()
        # Set when run() stops: a worker waiting at a closed gate gives up its key at once
        # (else stopping would wait stop_timeout for it).
        self._stopping = asyncio.Event()
        # Every end of a reconcile but the plain success (the reconcile contract's other rows).
        self._outcomes = OutcomeHandler(
            self, self._recorder, self._triggers, self._requeues, self._bound, clock
        )

    def use_priority_queue(self) -> PriorityQueue[str]:
        """Replace the queue with a :class:`~pycm.workqueue.priority_queue.PriorityQueue`
        (same name, clock, bus, metrics and rate limiter) before anything was queued: initial
        -list adds and resyncs then wait behind fresh changes. For a controller that builds
        its own Controller (the built-ins, behind --controller-priority-queue)."""
        if self._pq is not None:
            return self._pq
        old = self.queue
        if old.started or len(old.dirty_items()) or old.waiting():
            raise RuntimeError(f"{self.name}: the queue is in use; swap it before running")
        if self._queue_metrics is not None:
            self._queue_metrics.unbind_depth(self.name)
        self.queue = self._pq = PriorityQueue(
            old.name,
            rate_limiter=old.rate_limiter,
            clock=old.clock,
            bus=self._bus,
            metrics=self._queue_metrics,
        )
        return self._pq

    # -- enqueueing (called from informer handlers: synchronous, cheap) ---------------------

    def trigger(self, obj: Any, event: str, old: Any = None, initial: bool = False) -> Trigger:
        """The cause of an informer event on ``obj`` (pycm.trace.causes): this manager's write
        that returned the event's resourceVersion, else the writer the object names, else the
        informer's own (initial list, relist, resync). ``old``: an update's previous object
        (its changed paths are named; an unchanged resourceVersion is a resync); ``initial``:
        an add from the informer's first list. Called by handlers that enqueue, only then."""
        kind: Any = ""
        namespace: Any = ""
        name: Any = ""
        rv: Any = ""
        generate_name: Any = ""
        if isinstance(obj, dict):
            kind = obj.get("kind") or ""
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                namespace = meta.get("namespace") or ""
                name = meta.get("name") or ""
                rv = meta.get("resourceVersion") or ""
                generate_name = meta.get("generateName") or ""
        if not (type(kind) is str and type(name) is str and type(namespace) is str):
            return Trigger(str(kind), str(rv), event)
        rv = str(rv)
        obj_key = f"{namespace}/{name}" if namespace else name
        paths = ""
        if old is not None and event == "update":
            old_meta = old.get("metadata") if isinstance(old, dict) else None
            if isinstance(old_meta, dict) and old_meta.get("resourceVersion") == rv:
                return Trigger(kind, rv, "resync", object=obj_key)
            paths = changed_paths(old, obj)
        if initial:
            return Trigger(kind, rv, "initial", object=obj_key)
        return self._bus.causes.cause(
            kind,
            namespace,
            name,
            rv,
            event,
            paths,
            generate_name if type(generate_name) is str else "",
        )

    def enqueue(self, key: str, trigger: Trigger | None = None, reason: str = "") -> None:
        """Add ``key``, caused by ``trigger``. Events for a key that still waits merge into
        its one reconcile: the trigger then names the newest, the first and the count."""
        if trigger is not None:
            triggers = self._triggers
            waiting = triggers.get(key)
            triggers[key] = trigger if waiting is None else waiting.merge(trigger)
        pq = self._pq
        if pq is None:
            self.queue.add(key, reason or (trigger.event if trigger else "add"))
            return
        # A priority queue: an unchanged object's key waits behind fresh changes (it moves up
        # if a fresh change comes for it while it waits).
        low = trigger is not None and trigger.event in _LOW_PRIORITY_EVENTS
        pq.add(
            key,
            reason or (trigger.event if trigger else "add"),
            LOW_PRIORITY if low else DEFAULT_PRIORITY,
        )

    def enqueue_after(self, key: str, delay: float, reason: str = "after") -> None:
        if self._pq is not None:
            # A handler's delayed add (not a requeue): the default priority, whatever the
            # priority the key is being processed with.
            self._pq.add_after(key, delay, reason, DEFAULT_PRIORITY)
            return
        self.queue.add_after(key, delay, reason)

    # -- running ------------------------------------------------------------------------------

    async def run(self, workers: int, synced: Callable[[], Awaitable[bool]] | None = None) -> None:
        """Wait for the caches, start ``workers`` workers, and run until cancelled. Stopping
        shuts the queue down, lets in-flight syncs finish (bounded), then cancels them."""
        self.queue.start()
        self._stopping.clear()
        tasks: list[asyncio.Task[None]] = []
        try:
            if synced is not None and not await synced():
                log.error("%s: caches did not sync; not starting workers", self.name)
                return
            if self._metrics is not None:
                self._metrics.max_concurrent_reconciles.labels(self.name).set(workers)
            # Each reconcile is the root of its own trace (linked to its trigger), never a
            # child of whatever step started the controller (start-up, controller init).
            tasks = [
                asyncio.get_running_loop().create_task(
                    self._worker(), name=f"{self.name}: worker {i}", context=root_context()
                )
                for i in range(workers)
            ]
            self.running = True
            self.last_progress = self._clock.monotonic()
            self._bus.point(ControllerStarted(controller=self.name, workers=workers))
            # wait(), not gather(): cancelling run() must not cancel the workers mid-sync; the
            # finally block lets them finish the key in hand first.
            await asyncio.wait(tasks)
        finally:
            self.running = False
            self._stopping.set()
            self.queue.shut_down()
            if tasks:
                _, pending = await asyncio.wait(tasks, timeout=self._stop_timeout)
                await cancel_and_wait(pending, timeout=self._stop_timeout)
            await self.queue.aclose()
            self._bus.point(ControllerStopped(controller=self.name))

    async def _worker(self) -> None:
        queue = self.queue
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            self.last_progress = self._clock.monotonic()
            try:
                gate = self.gate
                if gate is None or gate.is_open() or await self._wait_gate(gate):
                    keys = self.key_gate
                    if keys is None:
                        await self.process(key)
                    else:
                        await self._process_admitted(keys, key)
            finally:
                queue.done(key)
                self.last_progress = self._clock.monotonic()

    async def _process_admitted(self, keys: KeyGate, key: str) -> None:
        """A sharded worker's key: reconciled, forgotten (another member's: said in the trace
        as ``queue.drop`` with the owner), or retried once another member has let go of it."""
        admission, why = keys.admit(key)
        if admission is KeyAdmission.TAKE:
            await self.process(key)
        elif admission is KeyAdmission.DROP:
            self._triggers.pop(key, None)
            self._requeues.pop(key, None)
            self.queue.forget(key)
            self._bus.point(ItemDropped(queue=self.name, key=key, retries=0, reason=why))
        else:  # WAIT: its trigger stays for the reconcile that will run
            self.queue.add_after(key, keys.retry_after)

    async def _wait_gate(self, gate: ReconcileGate) -> bool:
        """Wait for the gate to open (True) or the controller to stop (False)."""
        age = gate.age()
        log.warning(
            "%s: not starting a reconcile until the lease is renewed (%s)",
            self.name,
            "not leading" if age is None else f"last renew {age:.1f}s ago",
        )
        opened = asyncio.ensure_future(gate.wait_open())
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({opened, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (opened, stopping):
                waiter.cancel()
            await asyncio.gather(opened, stopping, return_exceptions=True)
        return opened.done() and not opened.cancelled() and not self._stopping.is_set()

    def _take_trigger(self, key: str) -> Trigger | None:
        """The cause the reconcile of ``key`` names: the events that brought it (merged), else
        the cause of its delayed add. A requeue's trigger waits in both tables; the reconcile
        its own delayed add brings takes it from both, one an event brought first (merged with
        it) leaves it for the delayed add still to come."""
        requeues = self._requeues
        trigger = self._triggers.pop(key, None)
        if trigger is None:
            return requeues.pop(key, None) if requeues else None
        if requeues and requeues.get(key) is trigger:
            del requeues[key]
        return trigger

    async def process(self, key: str) -> ReconcileResult:
        """One sync of ``key`` under the contract above (public for table tests).

        The sync is one traced reconcile: its begin and end are written by the controller's
        :class:`~pycm.trace.reconciles.ReconcileRecorder` (compact records, as cheap as a
        trace gets; see there), and its span and API-call counter are one contextvar set.
        Only a sync that returns a plain success runs the rest of this body: one that raises
        or asks to be requeued ends in the controller's
        :class:`~pycm.controller.outcomes.OutcomeHandler`.
        Keeping those paths out keeps this coroutine small enough for CPython's small-object
        allocator (the benchmark note "the reconcile's frame" in docs/operations.md;
        tests/controller/test_worker_events.py holds the size).
        """
        queue = self.queue
        # The limiter's counts when it exposes them: a lookup, and no forget() call below
        # while no key is counted (a call each, else).
        requeues = queue.requeues
        if requeues is None:
            # (A generic lookup of an instance attribute's method: this limiter's fallback
            # pays it rather than the frame a local more.)
            retries = queue.num_requeues(key)
        else:
            retries = requeues.get(key, 0) if requeues else 0
        parent = get_span()
        begin = self._recorder.begin(
            key,
            queue.waits.get(key, 0),
            retries,
            self._take_trigger(key) if self._triggers or self._requeues else None,
            parent,
        )
        # The span and the API-call counter of the sync, in one contextvar: a root's is this
        # list itself (its ids are derived from the begin record when read: context.py).
        calls: list[Any] = [0, begin]
        token: SpanToken = set_span(calls if parent is None else (*begin[2][1], calls))
        metrics = self._bound
        if metrics is not None:
            metrics.active_workers.inc()
            # For the metric only (its clock, not the bus's).
            start = self._clock.monotonic()
        try:
            sync = self.sync
            result = await sync(key) or _EMPTY
        except BaseException as exc:
            outcome = self._outcomes.failed(
                key, exc, retries, calls, token, start if metrics is not None else 0.0
            )
            if outcome is None:  # cancelled: propagates
                raise
            return outcome
        if result.requeue_after > 0.0 or result.requeue:
            return self._outcomes.requeued(
                key, result, calls, token, start if metrics is not None else 0.0
            )
        if requeues is None or requeues:
            try:
                forget = queue.forget
                forget(key)
            except BaseException as exc:  # the handling failed: as a step ends (and propagates)
                self._recorder.end_raised(begin, exc)
                self._outcomes.ended(token, start if metrics is not None else 0.0, _SUCCESS)
                raise
        reset_span(token)
        self._recorder.end_ok(begin, result.action, result.uid, result.api_calls or calls[0])
        if metrics is not None:
            metrics.active_workers.dec()
            metrics.reconcile_time_seconds.observe(self._clock.monotonic() - start)
            metrics.reconcile_total(_SUCCESS).inc()
        return _SUCCESS

    def stalled(self, threshold: float) -> str | None:
        """Why the queue is not making progress, or None: keys wait, yet no worker has taken
        or finished one for ``threshold`` seconds (all wedged, or none running)."""
        if not self.running:
            return None
        waiting = len(self.queue)
        idle = self._clock.monotonic() - self.last_progress
        if waiting and idle > threshold:
            return f"{waiting} keys waiting, no progress for {idle:.0f}s"
        return None


_EMPTY = Result()
