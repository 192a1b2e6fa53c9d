"""Informer factories: one shared informer per resource, started and stopped together
(client-go ``informers.SharedInformerFactory`` and ``metadatainformer``).

Controllers ask :meth:`SharedInformerFactory.informer_for` during construction (the same object
for the same resource, so every controller shares one cache per resource); the composition
root then calls :meth:`~SharedInformerFactory.start` (idempotent: it starts only informers not
started yet, each as a named, guarded task owned by the factory), awaits
:meth:`~SharedInformerFactory.wait_for_cache_sync`, and at the end
:meth:`~SharedInformerFactory.shutdown` (cancel and await every informer task).

:class:`MetadataInformerFactory` is the same machinery listing and watching with
``metadata_only=True``: the cache holds ``PartialObjectMetadata`` (apiVersion, kind, metadata).

Defaults: ``transform`` drops managedFields; ``intern=True`` shares identical sub-trees of the
cached objects — with a client that hands out raw bytes (``pycm.kube.Client.list_raw``) each
informer decodes with its own :class:`~pycm.cache.sharing_decoder.SharingDecoder` (managedFields
never decoded, repeated sub-trees decoded once: about 1.6× cheaper than decoding everything and
interning after), otherwise a :class:`~pycm.cache.transform.SubtreeInterner` is chained after
the transform; ``gc_tuning=True`` pauses the collector during lists and freezes what a list
leaves behind (:mod:`pycm.util.gc_tuning`).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Hashable
from typing import Any

from pycm.cache.fifo import TransformFunc
from pycm.cache.listers import Lister
from pycm.cache.listwatch import ClientListWatch, _Client
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.cache.sharing_decoder import SharingDecoder
from pycm.cache.transform import SubtreeInterner, chain, drop_managed_fields
from pycm.trace.bus import Bus, default_bus
from pycm.util import gc_tuning
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.tasks import cancel_and_wait, create_guarded_task

__all__ = [
    "MetadataInformerFactory",
    "SharedInformerFactory",
    "default_list_watch",
    "default_transform",
    "resource_name",
]


def resource_name(resource: Any) -> str:
    """``pods``, ``deployments.apps``: the name informers and their events go by."""
    plural = str(getattr(resource, "resource", resource))
    group = str(getattr(resource, "group", "") or "")
    return f"{plural}.{group}" if group else plural


def default_list_watch(
    client: _Client,
    resource: Any,
    *,
    namespace: str | None = None,
    metadata_only: bool = False,
    share: bool = True,
) -> ClientListWatch:
    """The factory's list-watch of one resource: with ``share``, decoding through a
    :class:`SharingDecoder` of its own when the client hands out raw bytes."""
    return ClientListWatch(
        client,
        resource,
        namespace=namespace,
        metadata_only=metadata_only,
        decoder=SharingDecoder() if share else None,
    )


def default_transform(transform: TransformFunc | None, *, share: bool) -> TransformFunc | None:
    """``transform``, followed by a :class:`SubtreeInterner` of its own when ``share`` (for a
    list-watch that decodes without sharing)."""
    if not share:
        return transform
    interner = SubtreeInterner()  # one table per informer: its objects share a shape
    return interner if transform is None else chain(transform, interner)


class SharedInformerFactory:
    """Creates, shares, starts and stops the informers of one client."""

    metadata_only = False

    def __init__(
        self,
        client: _Client,
        *,
        default_resync: float = 0.0,
        namespace: str | None = None,
        transform: TransformFunc | None = drop_managed_fields,
        bus: Bus | None = None,
        clock: Clock = REAL_CLOCK,
        rng: random.Random | None = None,
        gc_tuning: bool = True,
        intern: bool = True,
        mutation_detector: bool = False,
        watch_list: bool = False,
    ) -> None:
        self.client = client
        self.default_resync = default_resync
        self.namespace = namespace
        self.transform = transform
        self.bus = bus if bus is not None else default_bus()
        self.clock = clock
        self._rng = rng or random.Random()
        self.gc_tuning = gc_tuning
        self.intern = intern
        self.mutation_detector = mutation_detector
        # Informers sync by streaming lists (client-go's WatchListClient gate; the manager
        # passes its --feature-gates value, on by default as in client-go 1.35+).
        self.watch_list = watch_list
        # Invariant: every informer in _tasks is in _informers; a task is never restarted.
        self._informers: dict[Hashable, SharedIndexInformer] = {}
        self._tasks: dict[Hashable, asyncio.Task[None]] = {}
        self._shut_down = False

    def informer_for(
        self, resource: Hashable, *, resync: float | None = None
    ) -> SharedIndexInformer:
        """The shared informer of ``resource``, created on the first request."""
        informer = self._informers.get(resource)
        if informer is None:
            list_watch = default_list_watch(
                self.client,
                resource,
                namespace=self.namespace,
                metadata_only=self.metadata_only,
                share=self.intern,
            )
            informer = SharedIndexInformer(
                list_watch,
                resource_name(resource),
                resync=self.default_resync if resync is None else resync,
                transform=default_transform(
                    self.transform, share=self.intern and list_watch.decoder is None
                ),
                clock=self.clock,
                bus=self.bus,
                rng=random.Random(self._rng.random()),
                gc_tuning=self.gc_tuning,
                mutation_detector=self.mutation_detector,
                metadata_only=self.metadata_only,
                watch_list=self.watch_list,
            )
            self._informers[resource] = informer
        return informer

    def lister_for(self, resource: Hashable) -> Lister:
        return self.informer_for(resource).lister

    @property
    def informers(self) -> dict[Hashable, SharedIndexInformer]:
        return dict(self._informers)

    def start(self) -> int:
        """Start every informer not started yet; returns how many were started now."""
        if self._shut_down:
            raise RuntimeError("the informer factory was shut down")
        if self.gc_tuning:
            gc_tuning.tune_thresholds()
        started = 0
        for resource, informer in self._informers.items():
            if resource not in self._tasks:
                self._tasks[resource] = create_guarded_task(
                    informer.run(), name=f"informer:{informer.resource}"
                )
                started += 1
        return started

    async def wait_for_cache_sync(
        self,
        timeout: float | None = None,  # noqa: ASYNC109 - an outcome, not an error
    ) -> dict[Hashable, bool]:
        """Wait until every started informer has synced (or its task ended: it failed and will
        never sync), or ``timeout`` seconds pass; returns each started informer's synced state."""
        waits: dict[asyncio.Future[Any], Hashable] = {}
        for r, task in self._tasks.items():
            if not self._informers[r].has_synced() and not task.done():
                waits[asyncio.ensure_future(self._informers[r].wait_synced())] = r
        if waits:
            timer = (
                asyncio.ensure_future(self.clock.sleep(timeout)) if timeout is not None else None
            )
            # Each resource is waited for until its synced event or the end of its task.
            pending: dict[asyncio.Future[Any], Hashable] = {**waits}
            for r in waits.values():
                pending[self._tasks[r]] = r
            try:
                while set(pending.values()) & set(waits.values()):
                    watch = set(pending) | ({timer} if timer is not None else set())
                    done, _ = await asyncio.wait(watch, return_when=asyncio.FIRST_COMPLETED)
                    if timer is not None and timer in done:
                        break
                    finished = {pending[d] for d in done if d in pending}
                    pending = {f: r for f, r in pending.items() if r not in finished}
            finally:
                helpers = [*waits, *([timer] if timer is not None else [])]
                for fut in helpers:
                    fut.cancel()
                await asyncio.wait(helpers)
        return {r: self._informers[r].has_synced() for r in self._tasks}

    async def shutdown(self, timeout: float | None = None) -> list[asyncio.Task[Any]]:  # noqa: ASYNC109
        """Cancel every informer task and wait for them; returns tasks that did not stop."""
        self._shut_down = True
        tasks = list(self._tasks.values())
        return await cancel_and_wait(tasks, timeout=timeout, clock=self.clock)


class MetadataInformerFactory(SharedInformerFactory):
    """Informers of ``PartialObjectMetadata``: list and watch with ``metadata_only=True``."""

    metadata_only = True
