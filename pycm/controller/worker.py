"""The worker loop and the reconcile contract, on one page.

Event handlers only compute keys and call :meth:`Controller.enqueue`; workers take keys off
the rate-limiting queue and run the sync handler. What happens next is decided by how the
sync ended:

=============================== ==================================================== =========
sync ended with                 the worker then                                      result
=============================== ==================================================== =========
``Result()`` / ``None``         ``forget`` (the key's retry count resets)            success
``Result(requeue_after=d)``     ``forget``, then ``add_after(key, d)``               requeue_after
``Result(requeue=True)``        ``add_rate_limited`` (backoff, no error)             requeue
a 409 Conflict                  ``add_rate_limited``, logged quietly                 conflict
:class:`TerminalError`          ``drop`` (forget, ``queue.drop`` event), counted     error
any other exception             ``add_rate_limited`` while retries < max_retries     error
                                (for ever when it is None), else ``drop`` — logged
                                once, counted, the worker lives on
cancellation                    propagates (the controller is stopping)
=============================== ==================================================== =========

With a :class:`~pycm.workqueue.priority_queue.PriorityQueue` (``priority_queue=True``, or
:meth:`Controller.use_priority_queue`), :meth:`Controller.enqueue` gives the keys of
initial-list adds and resyncs ``LOW_PRIORITY`` and every other event the default priority, and
the requeues above keep the priority the key was taken with (as controller-runtime's controller
does), so a retry of a fresh change does not fall behind the initial list.

Each sync is one traced step (``reconcile.begin`` / ``reconcile.end``), the root of a trace of its
own: the key, the queue wait, the retries so far, the informer event that enqueued it
(:class:`Trigger`, the span link), and the outcome.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextvars import Token
from dataclasses import dataclass
from typing import Any, Protocol

from pycm.api.diff import changed_paths
from pycm.controller.metrics import ControllerMetrics
from pycm.kube.errors import ApiError, Conflict, FencedError
from pycm.sharding.gate import KeyAdmission
from pycm.trace.bus import Bus, default_bus
from pycm.trace.causes import Trigger, cause_of_record
from pycm.trace.context import (
    SpanValue,
    error_text,
    get_span,
    reset_span,
    root_context,
    set_span,
)
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

__all__ = [
    "Controller",
    "KeyGate",
    "ReconcileGate",
    "Result",
    "SyncHandler",
    "TerminalError",
    "Trigger",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_RETRIES = 15  # KCM's deployment and replicaset controllers

# The triggers a priority queue takes at LOW_PRIORITY: an add from the informer's initial list
# and an update whose resourceVersion did not change (a resync). Nothing changed in either, so
# a key that did change goes first (controller-runtime's WithLowPriorityWhenUnchanged).
_LOW_PRIORITY_EVENTS = frozenset({"initial", "resync"})

# The enum members process() uses, bound once: reading one off its class goes through
# EnumType.__getattr__ in Python 3.11 (~0.9k instructions, a tenth of a no-op sync's tracing).
_SUCCESS = ReconcileResult.SUCCESS
_REQUEUE = ReconcileResult.REQUEUE
_REQUEUE_AFTER = ReconcileResult.REQUEUE_AFTER
_ERROR = ReconcileResult.ERROR


class TerminalError(Exception):
    """A sync failure that retrying cannot fix: the key is dropped at once."""


@dataclass(frozen=True, slots=True)
class Result:
    requeue: bool = False
    requeue_after: float = 0.0
    action: str = ""  # what the sync did, for the trace: "noop", "scaled_up", ...
    uid: str = ""
    api_calls: int = 0


class KeyGate(Protocol):
    """A sharded member's say over each key (pycm.sharding.gate.ShardKeyGate): take it, drop
    it (another member's) or retry it after ``retry_after`` seconds (claimed elsewhere)."""

    retry_after: float

    def admit(self, key: str) -> tuple[KeyAdmission, str]: ...


class ReconcileGate(Protocol):
    """What a worker checks before it takes the next key (the leader elector's renew gate:
    closed while the last lease renew is older than RenewDeadline, pycm.leaderelection.gate)."""

    def is_open(self) -> bool: ...

    async def wait_open(self) -> None: ...

    def age(self) -> float | None: ...


SpanToken = Token[SpanValue | None]

SyncHandler = Callable[[str], Awaitable[Result | None]]
"""``async sync(key) -> Result | None`` — injectable, so tests call it directly."""


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
        self._bound: _BoundMetrics | None = (
            _BoundMetrics(metrics, name) if metrics is not None else None
        )
        self._stop_timeout = stop_timeout
        # The newest trigger per key waiting in the queue (a burst of events for one key is one
        # reconcile; it links to the last of them).
        self._triggers: dict[str, Trigger] = {}
        # Monotonic time a worker last took or finished a key (or the controller started):
        # the queue-progress health check compares it with the queue's backlog.
        self.last_progress = clock.monotonic()
        self.running = False
        # Leader-elected: set before the workers start; None runs ungated.
        self.gate: ReconcileGate | None = None
        # Sharded: asked before each key (after the gate); None takes every key.
        self.key_gate: KeyGate | None = None
        # Set when run() stops: a worker waiting at a closed gate gives up its key at once
        # (else stopping would wait stop_timeout for it).
        self._stopping = asyncio.Event()

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

    async def process(self, key: str) -> ReconcileResult:
        """One sync of ``key`` under the contract above (public for table tests).

        The sync is one traced reconcile: its begin and end are written by the controller's
        :class:`~pycm.trace.reconciles.ReconcileRecorder` (compact records, as cheap as a
        trace gets; see there), and its span and API-call counter are one contextvar set.
        Only a sync that returns a plain success runs the rest of this body: one that raises
        ends in :meth:`_end_failed`, one that asks to be requeued in :meth:`_end_requeued`.
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
            self._triggers.pop(key, None) if self._triggers else None,
            parent,
        )
        # The span and the API-call counter of the sync, in one contextvar: a root's is this
        # list itself (its ids are derived from the begin record when read: context.py).
        calls: list[Any] = [0, begin]
        token = set_span(calls if parent is None else (*begin[2][1], calls))
        metrics = self._bound
        if metrics is not None:
            metrics.active_workers.inc()
            # For the metric only (its clock, not the bus's).
            start = self._clock.monotonic()
        try:
            sync = self.sync
            result = await sync(key) or _EMPTY
        except BaseException as exc:
            outcome = self._end_failed(
                key, exc, retries, calls, token, start if metrics is not None else 0.0
            )
            if outcome is None:  # cancelled: propagates
                raise
            return outcome
        if result.requeue_after > 0.0 or result.requeue:
            return self._end_requeued(
                key, result, calls, token, start if metrics is not None else 0.0
            )
        if requeues is None or requeues:
            try:
                forget = queue.forget
                forget(key)
            except BaseException as exc:  # the handling failed: as a step ends (and propagates)
                self._recorder.end_raised(begin, exc)
                self._ended(token, start if metrics is not None else 0.0, _SUCCESS)
                raise
        reset_span(token)
        self._recorder.end_ok(begin, result.action, result.uid, result.api_calls or calls[0])
        if metrics is not None:
            metrics.active_workers.dec()
            metrics.reconcile_time_seconds.observe(self._clock.monotonic() - start)
            metrics.reconcile_total(_SUCCESS).inc()
        return _SUCCESS

    def _end_requeued(
        self,
        key: str,
        result: Result,
        calls: list[Any],
        token: SpanToken,
        start: float,
    ) -> ReconcileResult:
        """The end of a reconcile (:meth:`process`) whose sync asked to be requeued: after a
        delay (``requeue_after``, the retries forgotten) or rate limited (``requeue``). A
        failure of the handling ends the step with its error and propagates."""
        queue = self.queue
        requeue_after = result.requeue_after
        requeue_after_ms = 0.0
        try:
            if requeue_after > 0.0:
                self._requeued_by(key, calls[1], "requeue_after")
                queue.forget(key)
                queue.add_after(key, requeue_after, "requeue_after")
                outcome = _REQUEUE_AFTER
                requeue_after_ms = requeue_after * 1000
            else:
                self._requeued_by(key, calls[1], "requeue")
                queue.add_rate_limited(key)
                outcome = _REQUEUE
        except BaseException as exc:
            self._recorder.end_raised(calls[1], exc)
            self._ended(token, start, _SUCCESS)
            raise
        self._recorder.end_requeued(
            calls[1],
            outcome._value_,
            result.action,
            result.uid,
            result.api_calls or calls[0],
            requeue_after_ms,
        )
        self._ended(token, start, outcome)
        return outcome

    def _end_failed(
        self,
        key: str,
        exc: BaseException,
        retries: int,
        calls: list[Any],
        token: SpanToken,
        start: float,
    ) -> ReconcileResult | None:
        """The end of a reconcile (:meth:`process`) whose sync raised ``exc``: an Exception is
        handled under the contract and its outcome returned; anything else (cancelled) ends
        the step and returns None, for process to re-raise it. A failure of the handling ends
        the step with its error and propagates, as a step's would."""
        if not isinstance(exc, Exception):
            self._recorder.end_raised(calls[1], exc)
            self._ended(token, start, _SUCCESS)
            return None
        try:
            if isinstance(exc, TerminalError):
                self.queue.drop(key, reason="terminal error")
                log.error("%s: dropping %s: terminal error: %s", self.name, key, exc)
                if self._bound is not None:
                    self._bound.terminal_errors_total.inc()
                    self._bound.dropped("terminal error").inc()
                outcome = _ERROR
            else:
                outcome = self._handle_error(key, exc, retries, calls[1])
            error = error_text(exc)
        except BaseException as failed:
            # (The metric counts what the handling got to: nothing.)
            self._recorder.end_raised(calls[1], failed)
            self._ended(token, start, _SUCCESS)
            raise
        self._recorder.end_error(calls[1], outcome._value_, error, calls[0])
        self._ended(token, start, outcome)
        return outcome

    def _ended(self, token: SpanToken, start: float, outcome: ReconcileResult) -> None:
        """After the end record of a reconcile that did not end in :meth:`process`'s own
        success path (which does what this does, inline): the span closed, the metrics."""
        reset_span(token)
        metrics = self._bound
        if metrics is not None:
            metrics.active_workers.dec()
            metrics.reconcile_time_seconds.observe(self._clock.monotonic() - start)
            metrics.reconcile_total(outcome).inc()
            if outcome is _ERROR:
                metrics.reconcile_errors_total.inc()

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

    def _requeued_by(self, key: str, begin: tuple[Any, ...], event: str) -> None:
        """The reconcile of ``begin`` asked for ``key`` again (a retry, a requeue): the next
        reconcile's cause is this one (merged with an event that already waits for it)."""
        trigger = Trigger("", "", event, object=key, cause=cause_of_record(begin))
        waiting = self._triggers.get(key)
        self._triggers[key] = trigger if waiting is None else waiting.merge(trigger)

    def _handle_error(
        self, key: str, exc: Exception, retries: int, begin: tuple[Any, ...]
    ) -> ReconcileResult:
        if isinstance(exc, Conflict):
            log.debug("%s: conflict syncing %s, requeueing: %s", self.name, key, exc)
            self._requeued_by(key, begin, "retry")
            self.queue.add_rate_limited(key)
            return ReconcileResult.CONFLICT
        max_retries = self.max_retries
        if max_retries is None or retries < max_retries:
            # An unexpected exception's traceback is logged at the key's first failure only: a
            # sync that fails the same way on every retry would repeat it up to max_retries
            # times (an API error is its message alone, as KCM's HandleError logs it, and so is
            # a write the lease fence refused: its message names the renew age and deadline).
            log.warning(
                "%s: error syncing %s (retry %d): %s",
                self.name,
                key,
                retries,
                exc,
                exc_info=retries == 0 and not _is_api_error(exc),
            )
            self._requeued_by(key, begin, "retry")
            self.queue.add_rate_limited(key)
        else:
            log.error(
                "%s: dropping %s out of the queue after %d retries: %s",
                self.name,
                key,
                retries,
                exc,
            )
            self.queue.drop(key, reason="max retries")
            if self._bound is not None:
                self._bound.dropped("max retries").inc()
        return ReconcileResult.ERROR


class _BoundMetrics:
    """One controller's children of the :class:`ControllerMetrics` families."""

    __slots__ = (
        "_by_outcome",
        "_dropped",
        "_families",
        "_name",
        "active_workers",
        "reconcile_errors_total",
        "reconcile_time_seconds",
        "terminal_errors_total",
    )

    def __init__(self, metrics: ControllerMetrics, name: str) -> None:
        self._families, self._name = metrics, name
        self.active_workers = metrics.active_workers.labels(name)
        self.reconcile_time_seconds = metrics.reconcile_time_seconds.labels(name)
        self.reconcile_errors_total = metrics.reconcile_errors_total.labels(name)
        self.terminal_errors_total = metrics.terminal_errors_total.labels(name)
        self._by_outcome: dict[ReconcileResult, Any] = {}
        self._dropped: dict[str, Any] = {}

    def dropped(self, reason: str) -> Any:
        child = self._dropped.get(reason)
        if child is None:
            child = self._dropped[reason] = self._families.dropped_keys_total.labels(
                self._name, reason
            )
        return child

    def reconcile_total(self, outcome: ReconcileResult) -> Any:
        child = self._by_outcome.get(outcome)
        if child is None:
            child = self._by_outcome[outcome] = self._families.reconcile_total.labels(
                self._name, outcome.value
            )
        return child


def _is_api_error(exc: Exception) -> bool:
    return isinstance(exc, (ApiError, FencedError))


_EMPTY = Result()
