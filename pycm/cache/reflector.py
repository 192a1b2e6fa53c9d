"""The reflector: list, then watch, forever, feeding a store (client-go ``reflector.go``).

One loop (:meth:`Reflector.run`), stopped by cancellation:

1. **List** with resourceVersion ``"0"`` the first time (served from the API server's watch
   cache), later from the last synced RV, paged (``limit``, following ``continue``). On 410
   Expired or "too large resource version" it lists again at once with RV ``""`` (a consistent
   read from etcd). Then ``store.replace(items, rv)``.
2. **Watch** from the list's RV with bookmarks and a timeout random in [5 m, 10 m) so that
   the watches of many informers do not all end together. ADDED/MODIFIED/DELETED go to the
   store, BOOKMARK only advances the RV, an ERROR event becomes a :class:`StatusError`.
   A watch that ends normally (timeout, server close) is re-opened from the last RV without
   listing. 429 Too Many Requests or connection refused → back off and re-watch, no relist.
   410 Expired, any other error, or a "very short watch" (closed in under 1 s with no events)
   ends this round: back off, then list again.
3. **Back off** between rounds and between watch retries with one
   :class:`~pycm.util.ExponentialBackoffManager`: 800 ms doubling to 30 s with full jitter,
   reset after 2 minutes without a failure — quick recovery from a blip, no thundering herd
   from every informer of every replica when the API server is down.
4. **Resync**: while watching, every ``resync_period`` seconds, if ``should_resync()`` says
   a handler is due, ``store.resync()``.

Every phase emits its trace event: the ``informer.list`` step (items, bytes, pages, RV),
``WatchOpened``/``WatchClosed`` (reason, events), ``InformerRelisted`` (reason) and
``InformerBackedOff`` (delay).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from pycm.cache.gc_tuning import gc_paused
from pycm.cache.listwatch import ListerWatcher, Obj, StatusError, WatchEventPair
from pycm.cache.store import ReflectorStore
from pycm.kube import errors as kube_errors
from pycm.trace.bus import Bus, default_bus
from pycm.trace.context import error_text
from pycm.trace.kinds import (
    InformerBackedOff,
    InformerListBegan,
    InformerRelisted,
    WatchClosed,
    WatchCloseReason,
    WatchOpened,
)
from pycm.util.backoff import ExponentialBackoffManager
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MIN_WATCH_TIMEOUT",
    "VERY_SHORT_WATCH",
    "Reflector",
    "is_connection_refused",
    "is_expired",
    "is_too_large_resource_version",
    "is_too_many_requests",
]

_log = logging.getLogger(__name__)
_Items = list[Obj]  # (the class defines a method named list)

DEFAULT_PAGE_SIZE = 500
"""Items per list page: client-go's pager default is 500."""
MIN_WATCH_TIMEOUT = 300.0
"""Watches time out after [1, 2) times this (client-go's minWatchTimeout, 5 minutes)."""
VERY_SHORT_WATCH = 1.0
"""A watch that ends sooner than this with no event is treated as an error (client-go)."""


# ---------------------------------------------------------------------------------------------
# Error classification: pycm.kube's error tree first, then structurally (anything carrying a
# Status ``code``/``reason``, such as StatusError from the fake or a watch ERROR event).
# ---------------------------------------------------------------------------------------------


def _code(exc: BaseException) -> int | None:
    for attr in ("code", "status_code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def is_expired(exc: BaseException) -> bool:
    """410 Gone / Expired: the requested resourceVersion left the server's window."""
    return (
        kube_errors.is_expired(exc)
        or _code(exc) == 410
        or getattr(exc, "reason", None) in ("Expired", "Gone")
    )


def is_too_large_resource_version(exc: BaseException) -> bool:
    """The server has not caught up with the requested resourceVersion yet."""
    return (
        kube_errors.is_too_large_resource_version(exc)
        or "too large resource version" in str(exc).lower()
    )


def is_too_many_requests(exc: BaseException) -> bool:
    return (
        kube_errors.is_too_many_requests(exc)
        or _code(exc) == 429
        or getattr(exc, "reason", None) == "TooManyRequests"
    )


def is_connection_refused(exc: BaseException) -> bool:
    """The server is not accepting connections (pycm.kube: a TransportError from connecting)."""
    if isinstance(exc, kube_errors.TransportError) and str(exc).startswith(
        ("ConnectError", "ConnectTimeout")
    ):
        return True
    seen: BaseException | None = exc
    for _ in range(5):  # the exception and a few causes down its chain
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or "connection refused" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _rv_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _pair_batches(stream: Any) -> AsyncIterator[Sequence[WatchEventPair]] | None:
    """The stream's events by the list, if it offers them: a ``pair_batches()`` method giving
    an async iterator of sequences of ``(type, object)`` pairs, in watch order (each sequence
    typically what one read of the response decoded). None for a plain stream of pairs."""
    method = getattr(type(stream), "pair_batches", None)
    if not callable(method):
        return None
    batches: AsyncIterator[Sequence[WatchEventPair]] = stream.pair_batches()
    return batches


class Reflector:
    """Keeps ``store`` in step with the API through ``list_watch``.

    ``last_sync_resource_version`` is the RV of the last list or of the last watch event
    (bookmarks included) applied to the store; ``""`` before the first list.
    """

    def __init__(
        self,
        list_watch: ListerWatcher,
        store: ReflectorStore,
        *,
        resource: str,
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        rng: random.Random | None = None,
        page_size: int | None = DEFAULT_PAGE_SIZE,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        resync_period: float = 0.0,
        should_resync: Callable[[], bool] | None = None,
        backoff: ExponentialBackoffManager | None = None,
        after_list: Callable[[], None] | None = None,
        pause_gc_during_list: bool = False,
    ) -> None:
        self.list_watch = list_watch
        self.store = store
        self.resource = resource
        self.clock = clock
        self.bus = bus if bus is not None else default_bus()
        self._rng = rng or random.Random()
        self.page_size = page_size
        self.min_watch_timeout = min_watch_timeout
        self.resync_period = resync_period
        self.should_resync = should_resync
        self.backoff = backoff or ExponentialBackoffManager(clock=clock, rng=self._rng)
        self.after_list = after_list
        self.pause_gc_during_list = pause_gc_during_list
        self.last_sync_resource_version = ""
        # Set when a list from last_sync_resource_version got 410 / too large: list from "".
        self._rv_unavailable = False
        self.lists = 0  # completed lists (for tests and the informer's stats)
        # Events of the open watch so far (0 between watches), brought up to date once per
        # batch the stream hands over: the informer's progress report reads it.
        self.watch_events = 0

    # -- the loop -----------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled; every round ends with a backoff."""
        while True:
            try:
                reason = await self.list_and_watch()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                reason = error_text(exc)
                _log.warning("%s: list and watch failed: %s", self.resource, reason)
            self.bus.point(InformerRelisted(resource=self.resource, reason=reason))
            await self._back_off(reason)

    async def _back_off(self, reason: str) -> None:
        delay = self.backoff.next()
        self.bus.point(
            InformerBackedOff(resource=self.resource, delay_ms=delay * 1000.0, reason=reason)
        )
        await self.clock.sleep(delay)

    def relist_resource_version(self) -> str:
        """client-go's relistResourceVersion: "" after an expired RV, "0" at first, else the
        last synced RV (the list is then at least as fresh as what the store has seen)."""
        if self._rv_unavailable:
            return ""
        return self.last_sync_resource_version or "0"

    async def list_and_watch(self) -> str:
        """One round: list, then watch until something needs a relist; returns why."""
        await self.list()
        resync = None
        if self.resync_period > 0:
            resync = asyncio.create_task(
                self._resync_loop(), name=f"reflector:{self.resource}:resync"
            )
        try:
            return await self._watch_loop()
        finally:
            if resync is not None:
                resync.cancel()
                await asyncio.wait({resync})

    async def _resync_loop(self) -> None:
        while True:
            await self.clock.sleep(self.resync_period)
            if self.should_resync is None or self.should_resync():
                self.store.resync()

    # -- list -----------------------------------------------------------------------------------

    async def list(self) -> None:
        """List everything (paged) and replace the store's content with it, then call
        ``after_list``.

        With ``pause_gc_during_list`` the collector is off while the list is fetched, decoded and
        stored. On the first list it stays off until ``after_list`` has returned: the informer
        freezes the list's survivors there (:mod:`pycm.cache.gc_tuning`), so no collection ever
        scans the initial cache. Re-enabling it first let the next allocation run a young
        collection over everything the list allocated (60–80 ms per 10k pods, measured),
        which is why ``informers.list_gc`` read 0.89–0.96. Whatever cyclic garbage the list
        left is frozen with the cache, once per informer: it must not hold the pages (the
        client frees a read response by reference counting, see ``pycm.kube.client._unbind``;
        before that, every page body was frozen: 9.4 KB held per pod instead of 3.6 KB). A
        relist re-enables the collector before ``after_list``, so its garbage is collected and
        not frozen again and again over a long run."""
        if not self.pause_gc_during_list:
            await self._list()
            self._after_list()
            return
        initial = self.lists == 0
        with gc_paused():
            await self._list()
            if initial:
                self._after_list()
        if not initial:
            self._after_list()

    def _after_list(self) -> None:
        if self.after_list is not None:
            self.after_list()

    async def _list(self) -> None:
        rv = self.relist_resource_version()
        try:
            items, list_rv = await self._list_from(rv)
        except Exception as exc:
            if not (is_expired(exc) or is_too_large_resource_version(exc)):
                raise
            self._rv_unavailable = True
            reason = "too large resource version" if not is_expired(exc) else "expired"
            self.bus.point(InformerRelisted(resource=self.resource, reason=reason))
            items, list_rv = await self._list_from("")
        self._rv_unavailable = False
        self.last_sync_resource_version = list_rv
        self.lists += 1
        del items

    async def _list_from(self, rv: str) -> tuple[_Items, str]:
        begin = InformerListBegan(resource=self.resource, resource_version=rv)
        with self.bus.step(begin) as step:
            items, list_rv, pages, size = await self._pages(rv)
            self.store.replace(items, list_rv)
            step.finish(items=len(items), bytes=size, pages=pages, resource_version=list_rv)
        return items, list_rv

    async def _pages(self, rv: str) -> tuple[_Items, str, int, int]:
        items: _Items = []
        pages = size = 0
        continue_: str | None = None
        while True:
            page = await self.list_watch.list(
                # A continued list is pinned by its token; the RV goes with the first page only.
                resource_version=rv if continue_ is None else "",
                limit=self.page_size,
                continue_=continue_,
            )
            pages += 1
            size += page.size_bytes
            items.extend(page.items)
            if not page.continue_:
                return items, page.resource_version, pages, size
            continue_ = page.continue_

    # -- watch ----------------------------------------------------------------------------------

    async def _watch_loop(self) -> str:
        """Watch, re-watching after normal ends and retriable errors; return a relist reason."""
        while True:
            timeout = int(self.min_watch_timeout * (1.0 + self._rng.random()))
            rv = self.last_sync_resource_version
            opened = False
            try:
                async with self.list_watch.watch(
                    resource_version=rv, timeout_seconds=timeout, allow_watch_bookmarks=True
                ) as stream:
                    opened = True
                    self.bus.point(
                        WatchOpened(
                            resource=self.resource, resource_version=rv, timeout_s=float(timeout)
                        )
                    )
                    reason, error, events = await self._handle_watch(stream, timeout)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if opened:  # closing the stream failed: treat as a failed watch
                    reason, error, events = WatchCloseReason.ERROR, exc, 0
                elif is_too_many_requests(exc) or is_connection_refused(exc):
                    await self._back_off(f"watch: {error_text(exc)}")
                    continue
                else:
                    raise
            self.watch_events = 0
            self.bus.point(
                WatchClosed(
                    resource=self.resource,
                    reason=reason,
                    events=events,
                    resource_version=self.last_sync_resource_version,
                    error=error_text(error) if error is not None else "",
                )
            )
            if reason in (WatchCloseReason.TIMEOUT, WatchCloseReason.SERVER_CLOSED):
                continue
            if reason is WatchCloseReason.EXPIRED:
                return "expired"
            if reason is WatchCloseReason.TOO_SHORT:
                return "very short watch"
            assert error is not None
            if is_too_many_requests(error):
                await self._back_off(f"watch: {error_text(error)}")
                continue
            return f"watch: {error_text(error)}"

    async def _handle_watch(
        self, stream: Any, timeout_s: int
    ) -> tuple[WatchCloseReason, Exception | None, int]:
        """Apply the stream's events to the store until it ends; return how it ended."""
        store = self.store
        start = self.clock.monotonic()
        events = 0
        error: Exception | None = None
        # The per-event path: one dict lookup picks the store's method, the RV is read inline.
        apply = {"MODIFIED": store.update, "ADDED": store.add, "DELETED": store.delete}
        # A stream that can hand over its events by the list (what one read decoded) saves
        # an async-generator step per event; the pairs of any other stream are taken one by one.
        batched = _pair_batches(stream)
        source: AsyncIterator[Any] = batched if batched is not None else stream
        try:
            async for item in source:
                pairs: Sequence[WatchEventPair] = item if batched is not None else (item,)
                for kind, obj in pairs:
                    events += 1
                    op = apply.get(kind)
                    if op is not None:
                        op(obj)
                    elif kind == "ERROR":
                        raise StatusError.from_status(obj)
                    elif kind != "BOOKMARK":
                        _log.error("%s: unknown watch event type %r", self.resource, kind)
                        continue
                    try:
                        rv = obj["metadata"]["resourceVersion"]
                    except (KeyError, TypeError):
                        continue
                    if rv:
                        self.last_sync_resource_version = rv if type(rv) is str else str(rv)
                self.watch_events = events
        except asyncio.CancelledError:
            self.watch_events = 0
            self.bus.point(
                WatchClosed(
                    resource=self.resource,
                    reason=WatchCloseReason.STOPPED,
                    events=events,
                    resource_version=self.last_sync_resource_version,
                )
            )
            raise
        except Exception as exc:
            error = exc
        if error is not None:
            if is_expired(error):
                return WatchCloseReason.EXPIRED, error, events
            if isinstance(error, (StatusError, kube_errors.ApiError)) or is_too_many_requests(
                error
            ):
                return WatchCloseReason.ERROR, error, events
            # A broken stream (transport error mid-watch) is an early close: re-watch from the
            # last RV, unless it was also a very short watch.
        elapsed = self.clock.monotonic() - start
        if elapsed < VERY_SHORT_WATCH and events == 0:
            return WatchCloseReason.TOO_SHORT, error, events
        if error is not None:
            return WatchCloseReason.SERVER_CLOSED, error, events
        if elapsed >= timeout_s - 1:
            return WatchCloseReason.TIMEOUT, None, events
        return WatchCloseReason.SERVER_CLOSED, None, events
