# Over 500 lines, one concept: client-go's reflector.go, one list-and-watch loop.
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

**Streaming lists** (KEP-3157, client-go's ``WatchListClient`` gate, on by default since 1.35;
here ``watch_list=True``): with a list-watch that can (:class:`~pycm.cache.listwatch.
WatchLister`), step 1 is one watch with ``sendInitialEvents=true``, ``resourceVersionMatch=
NotOlderThan``, bookmarks and the last synced RV ("" at first: a consistent read). Its ADDED
events (MODIFIED and DELETED too, should they come) build the initial state aside; the BOOKMARK
annotated ``k8s.io/initial-events-end`` ends it with the state's RV: ``store.replace(items,
rv)``, and the same stream goes on as step 2's watch. The server never holds a whole list in
memory, nor does the client hold its pages.

The fallback to list and watch is bounded, because a server that never sends the bookmark
stalled client-go's informers for 10 s to 5 min (kubernetes#135895):

- a server that refuses ``sendInitialEvents`` (400 or 422: the WatchList gate off, or a
  server too old to validate it) or one that ignores it (a BOOKMARK without the annotation
  before the initial events ended) does not support it: this reflector lists from then on;
- a stream that ends, fails, or stays quiet for ``watch_list_quiet`` seconds (5 s by default:
  above kube-apiserver's 3 s wait for a fresh watch cache before its first initial event)
  before the bookmark is listed for this round, and streamed again the next round (as
  client-go, which retries WatchList each round);
- a 410 Expired or "too large resource version" streams again at once from "" (a consistent
  read), as a list does.

The first fallback is said once, in the log (a warning) and in the trace
(``InformerWatchListFellBack``: reason, and whether it is for good); later ones (per round)
only at debug level.

Every phase emits its trace event: the ``informer.list`` step (items, bytes, pages, RV;
``watch_list`` for a streaming list), ``WatchOpened``/``WatchClosed`` (reason, events),
``InformerRelisted`` (reason) and ``InformerBackedOff`` (delay).

The store's resource version: after each batch of watch events and after a replace the
reflector tells a store that takes it (``note_resource_version``, the FIFO's) the RV it has been
given up to; the informer reports, from it, how far its indexer has got (client-go's
``LastStoreSyncResourceVersion``, which the controllers' staleness guard reads).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, cast

from pycm.cache.listwatch import (
    INITIAL_EVENTS_END,
    ListerWatcher,
    Obj,
    StatusError,
    WatchEventPair,
    WatchLister,
)
from pycm.cache.store import ReflectorStore, meta_namespace_key
from pycm.kube import errors as kube_errors
from pycm.trace.bus import Bus, default_bus
from pycm.trace.context import error_text
from pycm.trace.kinds import (
    InformerBackedOff,
    InformerListBegan,
    InformerRelisted,
    InformerWatchListFellBack,
    WatchClosed,
    WatchCloseReason,
    WatchOpened,
)
from pycm.util.backoff import ExponentialBackoffManager
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.gc_tuning import gc_paused

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MIN_WATCH_TIMEOUT",
    "VERY_SHORT_WATCH",
    "WATCH_LIST_QUIET",
    "Reflector",
    "is_connection_refused",
    "is_expired",
    "is_too_large_resource_version",
    "is_too_many_requests",
]

_log = logging.getLogger(__name__)
_Items = list[Obj]  # (the class defines a method named list)
_Floats = list[float]

DEFAULT_PAGE_SIZE = 500
"""Items per list page: client-go's pager default is 500."""
MIN_WATCH_TIMEOUT = 300.0
"""Watches time out after [1, 2) times this (client-go's minWatchTimeout, 5 minutes)."""
VERY_SHORT_WATCH = 1.0
"""A watch that ends sooner than this with no event is treated as an error (client-go)."""
WATCH_LIST_QUIET = 5.0
"""A streaming list quiet this long before its initial-events-end bookmark is listed instead
(above kube-apiserver's 3 s wait for a fresh watch cache before the first initial event)."""


# ---------------------------------------------------------------------------------------------
# Error classification by pycm.kube's error tree: a subclass where the client mapped the Status,
# else the code and reason of any ApiError (a StatusError from a watch ERROR event or the fake).
# ---------------------------------------------------------------------------------------------


def is_expired(exc: BaseException) -> bool:
    """410 Gone / Expired: the requested resourceVersion left the server's window."""
    return isinstance(exc, kube_errors.ApiError) and (
        isinstance(exc, kube_errors.Expired) or exc.code == 410 or exc.reason in ("Expired", "Gone")
    )


def is_too_large_resource_version(exc: BaseException) -> bool:
    """The server has not caught up with the requested resourceVersion yet."""
    return (
        kube_errors.is_too_large_resource_version(exc)
        or "too large resource version" in str(exc).lower()
    )


def is_too_many_requests(exc: BaseException) -> bool:
    return isinstance(exc, kube_errors.ApiError) and (
        isinstance(exc, kube_errors.TooManyRequests)
        or exc.code == 429
        or exc.reason == "TooManyRequests"
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


def _source(stream: Any) -> tuple[AsyncIterator[Any], bool]:
    """What to iterate for ``stream``'s events: its batches when it offers them (True), else
    the stream itself, pair by pair (False)."""
    batched = _pair_batches(stream)
    if batched is not None:
        return batched, True
    return aiter(stream), False


class _NoWatchList(Exception):
    """A streaming list did not give the initial state; ``permanent``: the server does not
    support it (this reflector lists from now on)."""

    def __init__(self, reason: str, *, permanent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


@dataclass
class _Streamed:
    """A streaming list's watch, open, its initial events applied: the watch loop goes on with
    it. ``leftover``: events that came after the bookmark in its batch."""

    stack: AsyncExitStack
    source: AsyncIterator[Any]
    batched: bool
    leftover: Sequence[WatchEventPair]
    timeout_s: int
    start: float
    events: int
    resource_version: str


def _refuses_watch_list(exc: BaseException) -> bool:
    """The server's answer says it does not stream lists: 400 or 422 (the WatchList gate off:
    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled";
    an old server that validates the parameters otherwise)."""
    return isinstance(exc, kube_errors.ApiError) and (
        exc.code in (400, 422) or exc.reason in ("Invalid", "BadRequest")
    )


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
        watch_list: bool = False,
        watch_list_quiet: float = WATCH_LIST_QUIET,
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
        # Rounds whose initial state (a list or a streaming list) began, and the latest of
        # them whose state is in the store: a sync begun after a selection changed (``relist``)
        # is done once ``synced_through`` passes the ``syncs_started`` read at the change.
        self.syncs_started = 0
        self.synced_through = 0
        self._relist_asked = asyncio.Event()
        self._relist_reason = ""
        # Events of the open watch so far (0 between watches), brought up to date once per
        # batch the stream hands over: the informer's progress report reads it.
        self.watch_events = 0
        # Streaming lists: wanted (the WatchListClient gate), and still possible — False once
        # the server showed it does not support them (see the module's doc).
        self.watch_list = watch_list
        self.watch_list_quiet = watch_list_quiet
        self.watch_list_supported = True
        self.watch_list_fallbacks = 0  # rounds listed although a streaming list was wanted
        self._note_rv: Callable[[str], None] | None = getattr(store, "note_resource_version", None)

    # -- the loop -----------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled; every round ends with a backoff, except one ended
        by :meth:`relist` (asked for: the next list starts at once)."""
        while True:
            self._relist_asked.clear()
            round_ = asyncio.ensure_future(self.list_and_watch())
            asked = asyncio.ensure_future(self._relist_asked.wait())
            try:
                await asyncio.wait({round_, asked}, return_when=asyncio.FIRST_COMPLETED)
            finally:  # (cancelled from outside: both go, and the cancellation propagates)
                asked.cancel()
                if not round_.done():
                    round_.cancel()
                await asyncio.gather(round_, asked, return_exceptions=True)
            if not round_.cancelled():
                try:
                    reason = round_.result()
                except Exception as exc:
                    reason = error_text(exc)
                    _log.warning("%s: list and watch failed: %s", self.resource, reason)
            else:
                reason = self._relist_reason
                self.bus.point(InformerRelisted(resource=self.resource, reason=reason))
                continue
            self.bus.point(InformerRelisted(resource=self.resource, reason=reason))
            await self._back_off(reason)

    def relist(self, reason: str) -> None:
        """End the current round and list again at once, from the last synced resourceVersion
        (the store's content is replaced by the new list: what left the selection is deleted,
        what entered it added). For a list-watch whose selection changed — a sharded member's
        share (``ClientListWatch.shard_selector``)."""
        self._relist_reason = reason
        self._relist_asked.set()

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
        """One round: list (or stream the list), then watch until something needs a relist;
        returns why."""
        streamed = await self._sync()
        resync = None
        try:
            if self.resync_period > 0:
                resync = asyncio.create_task(
                    self._resync_loop(), name=f"reflector:{self.resource}:resync"
                )
            return await self._watch_loop(streamed)
        finally:
            if resync is not None:
                resync.cancel()
                await asyncio.wait({resync})
            if streamed is not None:
                await streamed.stack.aclose()  # (closed already unless the loop never ran)

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
        freezes the list's survivors there (:mod:`pycm.util.gc_tuning`), so no collection ever
        scans the initial cache. Re-enabling it first let the next allocation run a young
        collection over everything the list allocated (60–80 ms per 10k pods, measured),
        which is why ``informers.list_gc`` read 0.89–0.96. Whatever cyclic garbage the list
        left is frozen with the cache, once per informer: it must not hold the pages (the
        client frees a read response by reference counting, see ``pycm.kube.response.unbind``;
        before that, every page body was frozen: 9.4 KB held per pod instead of 3.6 KB). A
        relist re-enables the collector before ``after_list``, so its garbage is collected and
        not frozen again and again over a long run."""
        await self._with_gc(self._list)

    async def _sync(self) -> _Streamed | None:
        """The initial state of a round, as :meth:`list` makes it: by a streaming list when
        wanted and possible (its watch, open, returned), else by a list (None)."""
        streamed: _Streamed | None = None
        self.syncs_started += 1
        generation = self.syncs_started

        async def fetch() -> None:
            nonlocal streamed
            if self.watch_list and self.watch_list_supported and _can_stream(self.list_watch):
                streamed = await self._stream_or_fall_back()
            if streamed is None:
                await self._list()

        await self._with_gc(fetch)
        self.synced_through = generation
        return streamed

    async def _with_gc(self, fetch: Callable[[], Awaitable[None]]) -> None:
        if not self.pause_gc_during_list:
            await fetch()
            self._after_list()
            return
        initial = self.lists == 0
        with gc_paused():
            await fetch()
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
            if self._note_rv is not None:
                self._note_rv(list_rv)
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

    # -- streaming list -------------------------------------------------------------------------

    async def _stream_or_fall_back(self) -> _Streamed | None:
        """A streaming list (retried once from "" after 410 / too large), or None to list."""
        for _ in range(2):
            try:
                return await self._stream_list()
            except asyncio.CancelledError:
                raise
            except _NoWatchList as why:
                self._fall_back(why.reason, permanent=why.permanent)
                return None
            except Exception as exc:
                if is_expired(exc) or is_too_large_resource_version(exc):
                    self._rv_unavailable = True
                    continue
                if _refuses_watch_list(exc):
                    self._fall_back(f"refused: {error_text(exc)}", permanent=True)
                else:
                    self._fall_back(error_text(exc), permanent=False)
                return None
        self._fall_back("resource version expired twice", permanent=False)
        return None

    def _fall_back(self, reason: str, *, permanent: bool) -> None:
        first = self.watch_list_fallbacks == 0
        self.watch_list_fallbacks += 1
        if permanent:
            self.watch_list_supported = False
        if not first:
            _log.debug("%s: streaming list failed (%s): listing", self.resource, reason)
            return
        _log.warning(
            "%s: the streaming list (WatchList) failed, listing instead%s: %s",
            self.resource,
            " from now on" if permanent else " this time",
            reason,
        )
        self.bus.point(
            InformerWatchListFellBack(resource=self.resource, reason=reason, permanent=permanent)
        )

    async def _stream_list(self) -> _Streamed:
        """One streaming list: open it, take its initial events, replace the store's content."""
        rv = "" if self._rv_unavailable else self.last_sync_resource_version
        timeout = int(self.min_watch_timeout * (1.0 + self._rng.random()))
        streamer = cast(WatchLister, self.list_watch)  # (_sync asked _can_stream)
        begin = InformerListBegan(resource=self.resource, resource_version=rv, watch_list=True)
        stack = AsyncExitStack()
        try:
            with self.bus.step(begin) as step:
                stream = await stack.enter_async_context(
                    streamer.watch_list(resource_version=rv, timeout_seconds=timeout)
                )
                start = self.clock.monotonic()
                source, batched = _source(stream)
                items, list_rv, leftover, events = await self._initial_events(source, batched)
                self.store.replace(items, list_rv)
                if self._note_rv is not None:
                    self._note_rv(list_rv)
                step.finish(items=len(items), resource_version=list_rv)
        except BaseException:
            await stack.aclose()
            raise
        self._rv_unavailable = False
        self.last_sync_resource_version = list_rv
        self.lists += 1
        return _Streamed(stack, source, batched, leftover, timeout, start, events, list_rv)

    async def _initial_events(
        self, source: AsyncIterator[Any], batched: bool
    ) -> tuple[_Items, str, Sequence[WatchEventPair], int]:
        """Read the initial events up to the bookmark that ends them, giving up after
        ``watch_list_quiet`` seconds without an event (measured on the injected clock)."""
        progress = [self.clock.monotonic()]
        reader = asyncio.ensure_future(self._read_initial(source, batched, progress))
        try:
            while not reader.done():
                left = progress[0] + self.watch_list_quiet - self.clock.monotonic()
                if left <= 0:
                    raise _NoWatchList(
                        f"no initial-events-end bookmark after {self.watch_list_quiet:g}s "
                        "without events",
                        permanent=False,
                    )
                timer = asyncio.ensure_future(self.clock.sleep(left))
                try:
                    await asyncio.wait({reader, timer}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    timer.cancel()
            return reader.result()
        finally:
            if not reader.done():
                reader.cancel()
                await asyncio.wait({reader})

    async def _read_initial(
        self, source: AsyncIterator[Any], batched: bool, progress: _Floats
    ) -> tuple[_Items, str, Sequence[WatchEventPair], int]:
        state: dict[str, Obj] = {}
        events = 0
        async for item in source:
            progress[0] = self.clock.monotonic()
            pairs: Sequence[WatchEventPair] = item if batched else (item,)
            for i, (kind, obj) in enumerate(pairs):
                events += 1
                if kind in ("ADDED", "MODIFIED"):
                    state[meta_namespace_key(obj)] = obj
                elif kind == "DELETED":
                    state.pop(meta_namespace_key(obj), None)
                elif kind == "BOOKMARK":
                    meta = obj.get("metadata") or {}
                    if (meta.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                        return list(state.values()), _rv_of(obj), pairs[i + 1 :], events
                    raise _NoWatchList(
                        "a bookmark without k8s.io/initial-events-end came before the initial "
                        "events ended: the server ignores sendInitialEvents",
                        permanent=True,
                    )
                elif kind == "ERROR":
                    raise StatusError.from_status(obj)
            self.watch_events = events
        raise _NoWatchList(
            "the stream ended before its initial-events-end bookmark", permanent=False
        )

    # -- watch ----------------------------------------------------------------------------------

    async def _watch_loop(self, streamed: _Streamed | None = None) -> str:
        """Watch (first ``streamed``'s stream, if given), re-watching after normal ends and
        retriable errors; return a relist reason."""
        while True:
            timeout = int(self.min_watch_timeout * (1.0 + self._rng.random()))
            rv = self.last_sync_resource_version
            opened = False
            try:
                if streamed is not None:
                    first, streamed = streamed, None
                    async with first.stack:
                        opened = True
                        self.bus.point(
                            WatchOpened(
                                resource=self.resource,
                                resource_version=first.resource_version,
                                timeout_s=float(first.timeout_s),
                            )
                        )
                        reason, error, events = await self._handle_watch(
                            first.source,
                            first.batched,
                            first.timeout_s,
                            leftover=first.leftover,
                            start=first.start,
                            events=first.events,
                        )
                else:
                    async with self.list_watch.watch(
                        resource_version=rv, timeout_seconds=timeout, allow_watch_bookmarks=True
                    ) as stream:
                        opened = True
                        self.bus.point(
                            WatchOpened(
                                resource=self.resource,
                                resource_version=rv,
                                timeout_s=float(timeout),
                            )
                        )
                        source, batched = _source(stream)
                        reason, error, events = await self._handle_watch(source, batched, timeout)
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
        self,
        source: AsyncIterator[Any],
        batched: bool,
        timeout_s: int,
        *,
        leftover: Sequence[WatchEventPair] = (),
        start: float | None = None,
        events: int = 0,
    ) -> tuple[WatchCloseReason, Exception | None, int]:
        """Apply the stream's events (``leftover`` first: those read with a streaming list's
        bookmark) to the store until it ends; return how it ended. A stream that can hand
        over its events by the list (what one read decoded, ``batched``) saves an
        async-generator step per event; the pairs of any other stream are taken one by one."""
        store = self.store
        if start is None:
            start = self.clock.monotonic()
        error: Exception | None = None
        note = self._note_rv
        # The per-event path: one dict lookup picks the store's method, the RV is read inline.
        apply = {"MODIFIED": store.update, "ADDED": store.add, "DELETED": store.delete}

        async def batches() -> AsyncIterator[Any]:
            yield leftover
            async for item in source:
                yield item

        try:
            async for item in batches() if leftover else source:
                pairs: Sequence[WatchEventPair] = item if batched or item is leftover else (item,)
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
                if note is not None:
                    note(self.last_sync_resource_version)
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
            if isinstance(error, kube_errors.ApiError):
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


def _can_stream(list_watch: object) -> bool:
    """The list-watch offers :class:`~pycm.cache.listwatch.WatchLister` (asked of the class: a
    test double may fail on any unexpected attribute read from the instance)."""
    return callable(getattr(type(list_watch), "watch_list", None))
