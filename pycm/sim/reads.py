"""The read verbs' responses: get, list (a page) and watch, in the negotiated output (the
object as stored, PartialObjectMetadata, or a Table).

A typed list page is written from the stored objects' encodings (:class:`pycm.sim.table.Table`
keeps ``orjson.dumps`` of each object from its commit): the page's bytes are the envelope
around the joined encodings, byte for byte what ``orjson.dumps`` of the list would write, at
the cost of a copy instead of an encoding of every item (most of a list's cost in the emulator).
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from pycm.sim import errors
from pycm.sim.apicontext import APIContext
from pycm.sim.gostrconv import quote
from pycm.sim.listoptions import ListOptions, list_options, watch_timeout
from pycm.sim.negotiation import METADATA, TABLE, Output, negotiate
from pycm.sim.objects import Obj
from pycm.sim.resources import Resource
from pycm.sim.responses import json_response
from pycm.sim.streaming import WatchResponse, error_stream, send_watch
from pycm.sim.tables import partial_metadata, table
from pycm.sim.tokens import decode_continue
from pycm.sim.versions import parse_resource_version
from pycm.sim.watchlag import WATCH_LAG_SCOPE_KEY, lag
from pycm.sim.watchlist import watch_with_initial_events

__all__ = ["include_object", "list_body", "read"]

_INCLUDE_OBJECT = frozenset({"", "None", "Metadata", "Object"})


def include_object(query: dict[str, str]) -> str:
    """A Table's ``includeObject`` (kube's ValidateTableOptions; its 400 when unknown)."""
    include = query.get("includeObject", "")
    if include not in _INCLUDE_OBJECT:
        raise errors.bad_request(
            f"Unable to convert to Table as requested: includeObject: Invalid value: "
            f"{quote(include)}: must be 'Metadata', 'Object', 'None', or empty"
        )
    return include or "Metadata"


def read(
    ctx: APIContext,
    request: Request,
    res: Resource,
    verb: str,
    ns: str | None,
    name: str,
    sub: str,
    query: dict[str, str],
) -> Response:
    """A get, list or watch of ``res`` (its verb and path already checked)."""
    store = ctx.store
    out = negotiate(request.headers.get("accept"))
    # Checked for every read (kube parses it before serving from the cache or storage);
    # a get or list serves the current state whatever version it names.
    parse_resource_version(query.get("resourceVersion"))
    if verb == "get":
        if sub == "scale":
            return json_response(store.get_scale(res, ns, name))
        obj = store.peek(res, ns, name)
        if obj is None:
            raise errors.not_found(res.plural, name, res.group)
        return json_response(_render_one(ctx, res, obj, out, query))
    listing = list_options(
        query,
        verb == "watch",
        res,
        watch_list=ctx.watch_list,
        sharded=ctx.sharded_list_and_watch,
    )
    include = include_object(query) if out.mode == TABLE else "Metadata"
    if verb == "watch":
        lag_s = request.scope.get(WATCH_LAG_SCOPE_KEY, 0.0)  # a watch-lag fault's
        return _watch(ctx, res, ns, listing, out, include, lag_s)
    return _list(ctx, res, ns, listing, out, include)


def _render_one(
    ctx: APIContext, res: Resource, obj: Obj, out: Output, query: dict[str, str]
) -> Any:
    if out.mode == METADATA:
        return partial_metadata(obj, out.api_version)
    if out.mode == TABLE:
        now = ctx.store.clock.wall_ns() / 1e9
        include = include_object(query)
        return table(
            res.strategy.printer,
            [obj],
            now,
            include,
            {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            out.api_version,
        )
    return obj


def list_body(kind: str, api_version: str, list_meta: Obj, encoded: list[bytes]) -> bytes:
    """``orjson.dumps`` of ``{"kind", "apiVersion", "metadata", "items"}`` whose items are
    already encoded (``encoded``), written without decoding or encoding them again."""
    head = orjson.dumps({"kind": kind, "apiVersion": api_version, "metadata": list_meta})
    # The envelope's closing brace gives way to the items (orjson writes compact JSON).
    head = head[:-1] + b',"items":['
    if not encoded:
        return head + b"]}"
    # One join of the page (MBs): a second copy of it costs as much as the join itself.
    if len(encoded) == 1:
        return b"".join((head, encoded[0], b"]}"))
    return b",".join([head + encoded[0], *encoded[1:-1], encoded[-1] + b"]}"])


def _list(
    ctx: APIContext,
    res: Resource,
    ns: str | None,
    options: ListOptions,
    out: Output,
    include: str,
) -> Response:
    token = options.continue_token
    continue_from = decode_continue(token) if token else None
    page = ctx.store.list_page(
        res,
        ns,
        options.labels,
        options.fields,
        options.limit or None,
        continue_from,
        options.shards,
    )
    list_meta: Obj = {"resourceVersion": str(page.resource_version)}
    if page.continue_token:
        list_meta["continue"] = page.continue_token
        if page.remaining is not None:  # omitted, not null, as kube's omitempty pointer
            list_meta["remainingItemCount"] = page.remaining
    if options.shards is not None:  # KEP-5866: the selector applied, echoed as it was sent
        list_meta["shardInfo"] = {"selector": options.shards.text}
    if out.mode == TABLE:
        now = ctx.store.clock.wall_ns() / 1e9
        printer = res.strategy.printer
        return json_response(table(printer, page.items, now, include, list_meta, out.api_version))
    if out.mode == METADATA:
        items = [partial_metadata(o, out.api_version) for o in page.items]
        return json_response(
            {
                "kind": "PartialObjectMetadataList",
                "apiVersion": out.api_version,
                "metadata": list_meta,
                "items": items,
            }
        )
    body = list_body(res.list_kind, res.api_version, list_meta, page.encoded)
    return Response(body, media_type="application/json")


def _watch(
    ctx: APIContext,
    res: Resource,
    ns: str | None,
    options: ListOptions,
    out: Output,
    include: str,
    lag_s: float = 0.0,
) -> Response:
    timeout = watch_timeout(options.timeout_seconds)
    bookmarks = options.allow_watch_bookmarks
    try:
        if options.send_initial_events is not None:  # a streaming list (pycm.sim.watchlist)
            watcher = watch_with_initial_events(
                ctx.store, res, ns, options, options.send_initial_events
            )
        else:
            watcher = ctx.store.watch(
                res,
                ns,
                options.labels,
                options.fields,
                options.resource_version or None,
                shards=options.shards,
            )
    except errors.APIError as err:
        if err.code != 410:
            raise
        return StreamingResponse(error_stream(err.status()), media_type="application/json")
    lag(watcher, lag_s)
    return WatchResponse(
        watcher,
        lambda send: send_watch(
            send,
            watcher,
            res,
            ctx.store,
            out,
            include_object=include,
            timeout_seconds=timeout,
            bookmark_interval=ctx.bookmark_interval if bookmarks else None,
            stopping=lambda: ctx.stopping,
        ),
    )
