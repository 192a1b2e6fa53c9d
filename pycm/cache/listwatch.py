# Over 500 lines, one concept: what the reflector needs of the API.
"""What the reflector needs of the API: list pages and watch streams.

:class:`ListerWatcher` is the subset of the client the reflector uses, defined here where it is
used. :class:`ClientListWatch` adapts the real :mod:`pycm.kube` client (structurally: anything
with the client's ``list``/``watch`` signatures) to it for one resource, namespace and selector.
:class:`FakeListWatch` is the test double shipped with the code: scripted list pages, watch
streams and errors, every call recorded, and an unexpected call (nothing scripted) fails loudly.

A watch is an async context manager yielding an async iterator of ``(type, object)`` pairs,
``type`` being ``ADDED``, ``MODIFIED``, ``DELETED``, ``BOOKMARK`` or ``ERROR`` (whose object is a
``Status``). Leaving the context closes the stream.

A streaming list (KEP-3157, WatchList) is an optional capability, :class:`WatchLister`: a watch
from ``resource_version`` with ``sendInitialEvents=true``, ``resourceVersionMatch=NotOlderThan``
and bookmarks, whose stream begins with the collection's state as ADDED events ended by a
BOOKMARK annotated :data:`INITIAL_EVENTS_END`. Both list-watches here have it; one without it
is listed and watched (client-go's ``DoesClientNotSupportWatchListSemantics``).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections import deque
from collections.abc import AsyncIterator, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from pycm.api.sharding import ShardSelector
from pycm.kube.errors import StatusError

__all__ = [
    "INITIAL_EVENTS_END",
    "NOT_OLDER_THAN",
    "ClientListWatch",
    "Decoder",
    "FakeListWatch",
    "ListCall",
    "ListPage",
    "ListerWatcher",
    "Obj",
    "StatusError",
    "WatchCall",
    "WatchEventPair",
    "WatchLister",
    "WatchStream",
]

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
"""The annotation on the BOOKMARK that ends a streaming list's initial events (metav1's
``InitialEventsAnnotationKey``; its value is "true")."""
NOT_OLDER_THAN = "NotOlderThan"

Obj = dict[str, Any]
"""An API object as decoded from JSON (never rebuilt into a model class)."""

WatchEventPair = tuple[str, Obj]
"""One watch event: its type and its object."""

log = logging.getLogger(__name__)

_SEND_TURNS = 8
"""Loop turns given to a prefetch so that it writes its request (connection checkout, headers)
before the current page is decoded; a turn costs microseconds."""


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a list: its items, the list's resourceVersion and the continue token.

    ``size_bytes`` is the encoded size when the transport knows it (0 when it does not).
    """

    items: list[Obj]
    resource_version: str
    continue_: str | None = None
    size_bytes: int = 0


class ListerWatcher(Protocol):
    """The subset of the API client that a reflector uses."""

    async def list(
        self, *, resource_version: str, limit: int | None, continue_: str | None
    ) -> ListPage: ...

    def watch(
        self, *, resource_version: str, timeout_seconds: int, allow_watch_bookmarks: bool
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEventPair]]: ...


class WatchLister(Protocol):
    """The optional capability of a :class:`ListerWatcher` to stream a list (see the module's
    doc); ``resource_version`` "" asks for a consistent read."""

    def watch_list(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEventPair]]: ...


# ---------------------------------------------------------------------------------------------
# The adapter over pycm.kube.Client
# ---------------------------------------------------------------------------------------------


class _Client(Protocol):
    """The two calls of ``pycm.kube.Client`` the adapter uses (structural, so this module does
    not depend on the client's concrete class)."""

    async def list(self, resource: Any, **kwargs: Any) -> Any: ...

    def watch(self, resource: Any, **kwargs: Any) -> AbstractAsyncContextManager[Any]: ...


class Decoder(Protocol):
    """Decodes raw list bodies and watch lines (:class:`~pycm.cache.sharing_decoder.
    SharingDecoder`); used when the client can hand out raw bytes (``list_raw``, a watch
    with ``line_batches``)."""

    def decode_list(self, body: bytes) -> tuple[list[Obj], Obj]: ...

    def list_head(self, body: bytes) -> Obj | None: ...

    def decode_events(self, lines: list[bytes]) -> list[WatchEventPair]: ...


class ClientListWatch:
    """A :class:`ListerWatcher` over the real client for one resource (namespace, selectors)."""

    def __init__(
        self,
        client: _Client,
        resource: Any,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        decoder: Decoder | None = None,
        shard_selector: ShardSelector | None = None,
    ) -> None:
        self.client = client
        # The decoder applies only with a client that hands out raw bytes. Asked of the class:
        # a test double may fail on any unexpected attribute read from the instance.
        self.decoder = decoder if _has(client, "list_raw") else None
        # The next page, requested before this one is decoded (its continue token, its fetch).
        self._prefetch: tuple[str, asyncio.Task[bytes]] | None = None
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.metadata_only = metadata_only
        # KEP-5866: this member's share. Sent as ``shardSelector`` and also applied here, so
        # the cache holds exactly the share whether the server filtered or not (uid and
        # namespace never change, so an object never moves between shards). May be replaced
        # between lists (a sharded member's ring changed): the next list uses the new one.
        self.shard_selector = shard_selector
        self.server_filters: bool | None = None
        """Whether the last list came back filtered (``metadata.shardInfo``); None: not known."""

    def _scope(self) -> dict[str, Any]:
        scope: dict[str, Any] = {"namespace": self.namespace, "metadata_only": self.metadata_only}
        if self.label_selector:
            scope["label_selector"] = self.label_selector
        if self.field_selector:
            scope["field_selector"] = self.field_selector
        if self.shard_selector is not None:
            scope["shard_selector"] = str(self.shard_selector)
        return scope

    def _share(self, items: list[Obj], meta: Mapping[str, Any]) -> list[Obj]:
        """``items`` without those outside the shard; notes whether the server filtered."""
        selector = self.shard_selector
        if selector is None:
            return items
        filtered = bool(meta.get("shardInfo"))
        if self.server_filters is None and not filtered:
            log.warning(
                "%s: the server does not filter by shardSelector (KEP-5866's "
                "ShardedListAndWatch gate is off): this member filters on its side, so it "
                "receives and decodes every object, and only its cache holds its share",
                getattr(self.resource, "resource", self.resource),
            )
        self.server_filters = filtered
        return [obj for obj in items if selector.matches(obj)]

    async def list(
        self, *, resource_version: str, limit: int | None, continue_: str | None
    ) -> ListPage:
        if self.decoder is not None:
            return await self._list_decoded(self.decoder, resource_version, limit, continue_)
        raw: Mapping[str, Any] = await self.client.list(
            self.resource,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
            **self._scope(),
        )
        meta = raw.get("metadata") or {}
        return ListPage(
            items=self._share(list(raw.get("items") or ()), meta),
            resource_version=str(meta.get("resourceVersion") or ""),
            continue_=meta.get("continue") or None,
            size_bytes=int(getattr(raw, "size_bytes", 0) or 0),
        )

    def _fetch(
        self, resource_version: str, limit: int | None, continue_: str | None
    ) -> Coroutine[Any, Any, bytes]:
        return self.client.list_raw(  # type: ignore[attr-defined,no-any-return]
            self.resource,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
            **self._scope(),
        )

    async def _list_decoded(
        self, decoder: Decoder, resource_version: str, limit: int | None, continue_: str | None
    ) -> ListPage:
        """One page through the decoder, the next one requested before this one is decoded.

        Why: paging is sequential — the server prepares page k+1 only once asked, and asking
        needs page k's continue token. The token is read from the bytes before the items
        (:meth:`Decoder.list_head`), the next request sent, and page k decoded while the server
        prepares and sends page k+1: its latency hides behind the decoding. The prefetch lives
        only from one call to the next: the next call takes it (or cancels it if it asks for
        another token), and it is cancelled if this call fails or is cancelled."""
        prefetch, self._prefetch = self._prefetch, None
        task = None
        try:
            if prefetch is not None and continue_ is not None and prefetch[0] == continue_:
                body = await prefetch[1]
            else:
                if prefetch is not None:
                    prefetch[1].cancel()
                body = await self._fetch(resource_version, limit, continue_)
            head = decoder.list_head(body)
            token = (head or {}).get("continue")
            if isinstance(token, str) and token:
                task = asyncio.ensure_future(self._fetch("", limit, token))
                for _ in range(_SEND_TURNS):  # let it send its request before decoding
                    await asyncio.sleep(0)
                self._prefetch = (token, task)
            items, meta = decoder.decode_list(body)
        except BaseException:
            if task is not None:
                task.cancel()
                self._prefetch = None
            raise
        return ListPage(
            items=self._share(items, meta),
            resource_version=str(meta.get("resourceVersion") or ""),
            continue_=meta.get("continue") or None,
            size_bytes=len(body),
        )

    def watch(
        self, *, resource_version: str, timeout_seconds: int, allow_watch_bookmarks: bool
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEventPair]]:
        return self._watch(
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_watch_bookmarks=allow_watch_bookmarks,
        )

    def watch_list(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEventPair]]:
        return self._watch(
            listing=True,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_watch_bookmarks=True,
            send_initial_events=True,
            resource_version_match=NOT_OLDER_THAN,
        )

    @asynccontextmanager
    async def _watch(
        self, *, listing: bool = False, **options: Any
    ) -> AsyncIterator[AsyncIterator[WatchEventPair]]:
        async with self.client.watch(self.resource, **options, **self._scope()) as stream:
            decoder = self.decoder
            selector = self.shard_selector
            if decoder is not None and _has(stream, "line_batches"):
                yield _Decoded(stream.line_batches(), decoder, listing=listing, shard=selector)
            elif selector is None:
                yield _pairs(stream)
            else:
                yield _in_shard(_pairs(stream), selector)


async def _in_shard(
    pairs: AsyncIterator[WatchEventPair], selector: ShardSelector
) -> AsyncIterator[WatchEventPair]:
    """The events of objects in the shard (bookmarks and errors pass: they carry no object of
    the resource)."""
    async for kind, obj in pairs:
        if kind in _OBJECTLESS or selector.matches(obj):
            yield kind, obj


_OBJECTLESS = frozenset({"BOOKMARK", "ERROR"})


def _has(obj: object, method: str) -> bool:
    return callable(getattr(type(obj), method, None))


class _Decoded:
    """A watch's lines decoded a batch at a time (the lines a read brought, in one call).

    Iterated, it gives the pairs one by one; ``pair_batches()`` gives each batch's pairs as
    one list, which the reflector takes by the list: one async step per read rather than one
    per event (a read of a backlog holds tens of events).
    """

    __slots__ = ("_batches", "_decoder", "_listing", "_one_by_one", "_shard")

    def __init__(
        self,
        batches: AsyncIterator[list[bytes]],
        decoder: Decoder,
        *,
        listing: bool = False,
        shard: ShardSelector | None = None,
    ) -> None:
        self._batches = batches
        self._decoder = decoder
        self._shard = shard  # events of objects outside it are dropped (see _in_shard)
        # A streaming list's initial events, until its bookmark: decoded as a list's items
        # are, their managedFields left out. Why: the decoder hands a watched object's
        # managedFields on as bytes (~2.7 KB a pod) for the informer to note its writers, which
        # an initial event has none of (it is the list) — and the reflector holds every initial
        # object until the bookmark: at 10k pods, 27 MB more at the peak than a paged list.
        self._listing = listing
        self._one_by_one: AsyncIterator[WatchEventPair] | None = None

    async def pair_batches(self) -> AsyncIterator[list[WatchEventPair]]:
        decode_events = self._decoder.decode_events
        shard = self._shard
        async for lines in self._batches:
            pairs = decode_events(lines)
            if shard is not None:
                pairs = [p for p in pairs if p[0] in _OBJECTLESS or shard.matches(p[1])]
            yield self._as_listed(pairs) if self._listing else pairs

    def _as_listed(self, pairs: list[WatchEventPair]) -> list[WatchEventPair]:
        out: list[WatchEventPair] = []
        for i, (kind, obj) in enumerate(pairs):
            meta = obj.get("metadata")
            if kind == "BOOKMARK":
                if ((meta or {}).get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                    self._listing = False
                    out.append((kind, obj))
                    out.extend(pairs[i + 1 :])
                    return out
            elif type(meta) is dict and "managedFields" in meta:
                # (a copy: the decoder's objects are shared with nothing yet, but never mutated)
                meta = {k: v for k, v in meta.items() if k != "managedFields"}
                obj = {**obj, "metadata": meta}
            out.append((kind, obj))
        return out

    def __aiter__(self) -> _Decoded:
        return self

    async def __anext__(self) -> WatchEventPair:
        if self._one_by_one is None:
            self._one_by_one = self._pairs()
        return await anext(self._one_by_one)

    async def _pairs(self) -> AsyncIterator[WatchEventPair]:
        async for pairs in self.pair_batches():
            for pair in pairs:
                yield pair


async def _pairs(stream: AsyncIterator[Any]) -> AsyncIterator[WatchEventPair]:
    async for event in stream:
        if isinstance(event, tuple):
            yield event
        else:
            yield event.type, event.object


# ---------------------------------------------------------------------------------------------
# The test double
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListCall:
    resource_version: str
    limit: int | None
    continue_: str | None


@dataclass(frozen=True, slots=True)
class WatchCall:
    resource_version: str
    timeout_seconds: int
    allow_watch_bookmarks: bool
    watch_list: bool = False  # a streaming list (watch_list), not a plain watch


@dataclass
class WatchStream:
    """A scripted watch: its events in order, then either the end of the stream (``hang=False``)
    or, with ``hang=True``, a stream that stays open until :meth:`FakeListWatch.close_watches`
    or cancellation. ``raise_after`` raises that exception once the events are delivered.

    Events can also be pushed while it runs with :meth:`push`.
    """

    events: list[WatchEventPair | BaseException] = field(default_factory=list)
    hang: bool = False
    raise_after: BaseException | None = None
    _queue: asyncio.Queue[WatchEventPair | BaseException | None] | None = None

    def push(self, event: WatchEventPair | BaseException | None) -> None:
        """Deliver one more event (an exception is raised to the reader; None ends the stream)."""
        if self._queue is not None:
            self._queue.put_nowait(event)
        elif event is None:
            self.hang = False
        else:
            self.events.append(event)


class FakeListWatch:
    """A scriptable :class:`ListerWatcher` that records every call.

    Script it with :meth:`add_list` (a page or an exception per list call, in order) and
    :meth:`add_watch` (a :class:`WatchStream` or an exception per watch call). A call with nothing
    scripted raises :class:`AssertionError`, unless ``default_watch_hang`` is set, in which case
    an unscripted watch stays open (so a steady-state reflector parks instead of spinning).
    Objects are deep-copied on the way out, as decoding fresh JSON would give new objects.
    """

    def __init__(self, *, default_watch_hang: bool = False) -> None:
        self.lists: deque[ListPage | BaseException] = deque()
        self.watches: deque[WatchStream | BaseException] = deque()
        self.list_calls: list[ListCall] = []
        self.watch_calls: list[WatchCall] = []
        self.default_watch_hang = default_watch_hang
        self.open_watches: list[WatchStream] = []

    def add_list(self, *pages: ListPage | BaseException) -> FakeListWatch:
        self.lists.extend(pages)
        return self

    def add_watch(self, *streams: WatchStream | BaseException) -> FakeListWatch:
        self.watches.extend(streams)
        return self

    async def list(
        self, *, resource_version: str, limit: int | None, continue_: str | None
    ) -> ListPage:
        self.list_calls.append(ListCall(resource_version, limit, continue_))
        await asyncio.sleep(0)
        if not self.lists:
            raise AssertionError(f"unexpected list call: {self.list_calls[-1]}")
        page = self.lists.popleft()
        if isinstance(page, BaseException):
            raise page
        return ListPage(
            copy.deepcopy(page.items), page.resource_version, page.continue_, page.size_bytes
        )

    def close_watches(self) -> None:
        """End every open hanging watch (as a server-side close)."""
        for stream in self.open_watches:
            stream.push(None)

    def watch(
        self, *, resource_version: str, timeout_seconds: int, allow_watch_bookmarks: bool
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEventPair]]:
        return self._open(WatchCall(resource_version, timeout_seconds, allow_watch_bookmarks))

    def watch_list(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEventPair]]:
        """A streaming list: the next scripted watch (script its ADDED events and the bookmark
        annotated INITIAL_EVENTS_END, or what a server without WatchList does)."""
        return self._open(WatchCall(resource_version, timeout_seconds, True, watch_list=True))

    @asynccontextmanager
    async def _open(self, call: WatchCall) -> AsyncIterator[AsyncIterator[WatchEventPair]]:
        self.watch_calls.append(call)
        await asyncio.sleep(0)
        if self.watches:
            scripted = self.watches.popleft()
        elif self.default_watch_hang:
            scripted = WatchStream(hang=True)
        else:
            raise AssertionError(f"unexpected watch call: {self.watch_calls[-1]}")
        if isinstance(scripted, BaseException):
            raise scripted
        stream = scripted
        queue: asyncio.Queue[WatchEventPair | BaseException | None] = asyncio.Queue()
        for event in stream.events:
            queue.put_nowait(event)
        if not stream.hang:
            if stream.raise_after is not None:
                queue.put_nowait(stream.raise_after)
            queue.put_nowait(None)
        stream._queue = queue
        self.open_watches.append(stream)
        try:
            yield _drain(queue)
        finally:
            self.open_watches.remove(stream)


async def _drain(
    queue: asyncio.Queue[WatchEventPair | BaseException | None],
) -> AsyncIterator[WatchEventPair]:
    while True:
        item = await queue.get()
        if item is None:
            return
        if isinstance(item, BaseException):
            raise item
        kind, obj = item
        yield kind, copy.deepcopy(obj)
