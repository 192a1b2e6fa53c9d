"""The shared index informer: reflector → FIFO → indexer → handlers (client-go
``shared_informer.go``).

:meth:`SharedIndexInformer.run` runs three kinds of tasks in one task group: the reflector
(list and watch into the :class:`~pycm.cache.fifo.RealFIFO`), the processing loop (pops deltas,
updates the indexer, hands notifications to handlers) and one task per handler
(:mod:`pycm.cache.processor`). Stopping is cancelling ``run()``.

Delivery rules, per delta: Sync / Replaced / Added / Updated → ``on_update(old, new)`` if the key
was cached, else ``on_add(obj, is_in_initial_list)``; Deleted → ``on_delete(obj or tombstone)``.
An update whose old and new resourceVersion are equal (a Sync delta, or a Replaced one after a
relist that found the object unchanged) is a resync notification: it goes only to the handlers
whose own resync period is due. A handler added after the start first gets a synthetic add of
every cached object (``is_in_initial_list=True``).

``has_synced()`` is true once the initial list has been stored; a registration's ``has_synced()``
also needs its initial adds delivered. :class:`~pycm.trace.kinds.InformerSynced` is emitted once,
when the informer and every handler registered at that time have synced; after that,
:class:`~pycm.trace.kinds.InformerProgress` (cache size, the open watch's events, backlog) every
:data:`PROGRESS_INTERVAL` seconds in which any of them changed, so that live views need not wait
for a watch's close to see its traffic.

The ``transform`` (default :func:`~pycm.cache.transform.drop_managed_fields`) runs before the
object is queued; from then on cached objects are never mutated. ``mutation_detector=True``
(tests) checks that on every access and update.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from pycm.cache.fifo import DeltaType, RealFIFO, TransformFunc
from pycm.cache.indexer import Indexer, IndexFunc
from pycm.cache.listers import Lister
from pycm.cache.listwatch import ListerWatcher
from pycm.cache.mutation import MutationDetector
from pycm.cache.processor import (
    ADD,
    DEFAULT_BUFFER_SIZE,
    DELETE,
    UPDATE,
    Notification,
    Registration,
    ResourceEventHandler,
)
from pycm.cache.reflector import Reflector
from pycm.cache.store import meta_namespace_key
from pycm.cache.transform import drop_managed_fields
from pycm.trace.bus import Bus, default_bus
from pycm.trace.causes import RELIST, CauseTable, writers_of
from pycm.trace.context import root_context
from pycm.trace.kinds import InformerProgress, InformerStarted, InformerSynced
from pycm.util import gc_tuning
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = [
    "MINIMUM_RESYNC_PERIOD",
    "PROGRESS_INTERVAL",
    "SharedIndexInformer",
    "wait_for_cache_sync",
]

MINIMUM_RESYNC_PERIOD = 1.0
"""client-go's floor for a handler's resync period (0 still means "never")."""
BATCH = 1000
"""Deltas processed per turn of the loop before yielding to handlers and the reflector."""
PROGRESS_INTERVAL = 2.0
"""Seconds between a synced informer's progress reports (:class:`InformerProgress`), each sent
only when the cache size, the open watch's event count or the backlog changed since the last."""


# Enum members as globals: reading one through its class is a descriptor call (Python 3.11).
_DELETED, _SYNC, _REPLACED = DeltaType.DELETED, DeltaType.SYNC, DeltaType.REPLACED


def note_writers(causes: CauseTable, transform: TransformFunc | None) -> TransformFunc:
    """``transform`` preceded by noting the writers each object names (its
    ``metadata.managedFields`` entries, pycm.trace.causes), before a transform drops them."""

    def noting(obj: Any) -> Any:
        meta = obj.get("metadata")
        if type(meta) is dict and "managedFields" in meta:
            entries = meta["managedFields"]
            # The sharing decoder hands a watched object's on as JSON bytes: noted as they are
            # (decoded only if a handler asks), and never cached in that form.
            writer = entries if type(entries) is bytes else writers_of(meta)
            if type(entries) is bytes:
                del meta["managedFields"]
            if writer:
                causes.note_writer(
                    meta.get("namespace") or "",
                    meta.get("name") or "",
                    meta.get("resourceVersion") or "",
                    writer,
                )
        return obj if transform is None else transform(obj)

    noting.transform = transform  # type: ignore[attr-defined]  # (what it precedes, for tests)
    return noting


def _note_relist(causes: CauseTable, obj: Any) -> None:
    meta = obj.get("metadata") if type(obj) is dict else None
    if type(meta) is dict:
        causes.note_writer(
            meta.get("namespace") or "",
            meta.get("name") or "",
            meta.get("resourceVersion") or "",
            RELIST,
        )


def _rv(obj: Any) -> Any:
    return (obj.get("metadata") or {}).get("resourceVersion")


class SharedIndexInformer:
    """One resource's cache, kept by a reflector and shared by several handlers."""

    def __init__(
        self,
        list_watch: ListerWatcher,
        resource_name: str,
        *,
        resync: float = 0.0,
        transform: TransformFunc | None = drop_managed_fields,
        indexers: dict[str, IndexFunc] | None = None,
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        rng: random.Random | None = None,
        mutation_detector: bool = False,
        gc_tuning: bool = False,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
        metadata_only: bool = False,
        page_size: int | None = 500,
        progress_interval: float = PROGRESS_INTERVAL,
        watch_list: bool = False,
    ) -> None:
        self.resource = resource_name
        self.clock = clock
        self.bus = bus if bus is not None else default_bus()
        self.default_resync = resync
        self.buffer_size = buffer_size
        self.metadata_only = metadata_only
        self.detector = MutationDetector(resource_name) if mutation_detector else None
        # Called with the key and the last cached object as an object leaves the cache, before
        # any handler hears of it (a uid-sharded gate remembers a deleted key's uid here).
        self.removal_hooks: list[Callable[[str, Any], None]] = []
        self.indexer = Indexer(
            indexers, on_access=self.detector.check if self.detector is not None else None
        )
        self.fifo = RealFIFO(self.indexer, transform=note_writers(self.bus.causes, transform))
        self.gc_tuning = gc_tuning
        self.reflector = Reflector(
            list_watch,
            self.fifo,
            resource=resource_name,
            clock=clock,
            bus=self.bus,
            rng=rng,
            page_size=page_size,
            resync_period=resync,
            should_resync=self._should_resync,
            pause_gc_during_list=gc_tuning,
            after_list=self._after_list,
            watch_list=watch_list,
        )
        self._registrations: list[Registration] = []
        self._syncing: list[Registration] = []
        self._tg: asyncio.TaskGroup | None = None
        self._started = False
        self._start_s = 0.0
        self._synced_event = asyncio.Event()
        self._synced_reported = False
        self.progress_interval = progress_interval  # 0: no progress reports
        # (objects, open watch's events, backlog) as last reported (at sync, then by progress).
        self._reported: tuple[int, int, int] | None = None

    @property
    def store_resource_version(self) -> str:
        """How far the indexer has got: the resource version of the last list, watch event or
        bookmark it holds everything up to ("" before the first list). client-go's
        ``LastStoreSyncResourceVersion``; the staleness guard compares writes with it."""
        return self.fifo.resource_version

    # -- handlers -----------------------------------------------------------------------------

    def add_event_handler(
        self, handler: ResourceEventHandler, resync: float | None = None, *, name: str = ""
    ) -> Registration:
        """Register ``handler`` (with its own resync period; None = the informer's)."""
        period = self.default_resync if resync is None else resync
        if 0 < period < MINIMUM_RESYNC_PERIOD:
            period = MINIMUM_RESYNC_PERIOD
        if self._started and period > 0:
            # The reflector's resync timer is already running at its period: client-go raises
            # a shorter handler period to it after start, and so do we.
            check = self.reflector.resync_period
            period = max(period, check) if check > 0 else 0.0
        elif period > 0 and (
            self.reflector.resync_period <= 0 or period < self.reflector.resync_period
        ):
            self.reflector.resync_period = period
        reg = Registration(
            handler,
            name=name or f"{type(handler).__name__}-{len(self._registrations)}",
            resource=self.resource,
            bus=self.bus,
            informer_synced=self.has_synced,
            cached=self.indexer.get_by_key,
            after_delivery=self._maybe_synced,
            now=self.clock.monotonic(),
            resync_period=period,
            buffer_size=self.buffer_size,
        )
        self._registrations.append(reg)
        if self._started:
            for obj in self.indexer.list():
                reg.push((ADD, obj, None, True))
        if self._tg is not None:
            reg.start(self._tg)
        return reg

    def remove_event_handler(self, reg: Registration) -> None:
        if reg in self._registrations:
            self._registrations.remove(reg)
            if reg in self._syncing:
                self._syncing.remove(reg)
            reg.stop()

    @property
    def registrations(self) -> list[Registration]:
        return list(self._registrations)

    def _should_resync(self) -> bool:
        now = self.clock.monotonic()
        self._syncing = [r for r in self._registrations if r._should_resync(now)]
        return bool(self._syncing)

    # -- reads --------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        return self.fifo.has_synced()

    async def wait_synced(self) -> None:
        await self._synced_event.wait()

    @property
    def lister(self) -> Lister:
        return Lister(self.indexer)

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        self.indexer.add_indexers(indexers)

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    # -- running ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled (it can be run once)."""
        if self._started:
            raise RuntimeError(f"informer {self.resource} was already started")
        self._started = True
        self._start_s = self.clock.monotonic()
        self.bus.point(
            InformerStarted(
                resource=self.resource,
                metadata_only=self.metadata_only,
                resync_s=self.default_resync,
            )
        )
        try:
            async with asyncio.TaskGroup() as tg:
                self._tg = tg
                for reg in self._registrations:
                    reg.start(tg)
                tg.create_task(self._process_loop(), name=f"informer:{self.resource}:process")
                tg.create_task(self.reflector.run(), name=f"informer:{self.resource}:reflector")
                if self.progress_interval > 0:
                    # A report belongs to no step: not to start-up's, which started the informer.
                    tg.create_task(
                        self._report_progress(),
                        name=f"informer:{self.resource}:progress",
                        context=root_context(),
                    )
        finally:
            self._tg = None

    def _after_list(self) -> None:
        if self.gc_tuning:
            gc_tuning.freeze_survivors()
        self._check_fifo_synced()  # an empty first list queues nothing: nothing to pop

    def _check_fifo_synced(self) -> None:
        if not self._synced_event.is_set() and self.fifo.has_synced():
            self._synced_event.set()
        self._maybe_synced()

    async def _process_loop(self) -> None:
        fifo = self.fifo
        while True:
            batch, initial = await fifo.pop_batch(BATCH)
            self._process(batch, initial)
            self._check_fifo_synced()
            await asyncio.sleep(0)

    def _process(self, batch: list[tuple[DeltaType, Any]], initial: int) -> None:
        """Apply popped deltas to the indexer and queue their notifications, in order.

        The per-event path: each key is computed once here and handed to the indexer; the
        notifications of the batch go to each handler's buffer in one call (a resync-only
        notification, which goes to fewer handlers, first flushes those before it, so that
        every handler still sees its notifications in delta order)."""
        items = self.indexer._items  # read without the access hook; writes go through it
        put = self.indexer.put
        delete_key = self.indexer.delete_key
        detector = self.detector
        notes: list[Notification] = []
        n_initial = 0
        for i, (kind, obj) in enumerate(batch):
            # meta_namespace_key written out (one call less per event); anything unusual —
            # a tombstone, no name, a non-string name — takes the function itself.
            try:
                meta = obj["metadata"]
                name = meta["name"]
                namespace = meta.get("namespace")
            except (TypeError, KeyError, AttributeError):
                key = meta_namespace_key(obj)
            else:
                if type(name) is str and name:
                    key = f"{namespace}/{name}" if namespace else name
                else:
                    key = meta_namespace_key(obj)
            if kind is _REPLACED and i >= initial:
                # A relist's object: whatever wrote it meanwhile, the event is the informer's
                # own catch-up (pycm.trace.causes).
                _note_relist(self.bus.causes, obj)
            if kind is _DELETED:
                old = items.get(key)
                delete_key(key)
                if old is not None:
                    if detector is not None:
                        detector.forget(old)
                    for hook in self.removal_hooks:
                        hook(key, old)
                notes.append((DELETE, obj, None, False))
                continue
            if kind is _SYNC:
                old = items.get(key)  # a Sync delta carries the cached object itself
                if old is not obj:
                    put(key, obj)
            else:
                old = put(key, obj)
            if old is None:
                if detector is not None:
                    detector.record(obj)
                if i < initial:
                    n_initial += 1
                    notes.append((ADD, obj, None, True))
                else:
                    notes.append((ADD, obj, None, False))
                continue
            if detector is not None and old is not obj:
                detector.forget(old)
                detector.record(obj)
            if kind is _SYNC or (kind is _REPLACED and _rv(old) == _rv(obj)):
                if notes:
                    self._push_notes(notes, n_initial)
                    notes, n_initial = [], 0
                for reg in self._syncing:
                    reg.push((UPDATE, old, obj, False))
            else:
                notes.append((UPDATE, old, obj, False))
        if notes:
            self._push_notes(notes, n_initial)

    def _progress(self) -> tuple[int, int, int]:
        return len(self.indexer), self.reflector.watch_events, len(self.fifo)

    async def _report_progress(self) -> None:
        """Every ``progress_interval`` once synced, report the cache and the watch if they
        changed (an idle informer stays quiet): ``InformerSynced`` reports the size only at
        sync, ``WatchClosed`` a watch's events only at its end, 5 to 10 minutes later."""
        while True:
            await self.clock.sleep(self.progress_interval)
            if self._reported is None:  # not synced yet
                continue
            progress = self._progress()
            if progress == self._reported:
                continue
            self._reported = progress
            objects, watch_events, pending = progress
            self.bus.point(
                InformerProgress(
                    resource=self.resource,
                    objects=objects,
                    watch_events=watch_events,
                    pending=pending,
                    resource_version=self.reflector.last_sync_resource_version,
                )
            )

    def _push_notes(self, notes: list[Notification], initial: int) -> None:
        for reg in self._registrations:
            reg.push_many(notes, initial)

    def _maybe_synced(self) -> None:
        if self._synced_reported or not self.has_synced():
            return
        if all(r.has_synced() for r in self._registrations):
            self._synced_reported = True
            self._reported = self._progress()
            self.bus.point(
                InformerSynced(
                    resource=self.resource,
                    objects=len(self.indexer),
                    duration_ms=(self.clock.monotonic() - self._start_s) * 1000.0,
                )
            )


async def wait_for_cache_sync(
    *checks: Callable[[], bool],
    clock: Clock = REAL_CLOCK,
    poll: float = 0.1,
    timeout_s: float | None = None,
) -> bool:
    """Poll ``checks`` every ``poll`` seconds until all hold (True) or ``timeout_s`` passes
    (False) — client-go ``WaitForCacheSync``, with a bound."""
    deadline = None if timeout_s is None else clock.monotonic() + timeout_s
    while True:
        if all(check() for check in checks):
            return True
        if deadline is not None and clock.monotonic() >= deadline:
            return False
        await clock.sleep(poll)
