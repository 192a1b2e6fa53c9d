"""The REST handlers: one Starlette endpoint serving every kube-style path.

Order of one request (the fault engineer's hooks run first, so an injected failure needs no
credentials): ``before_request`` hooks → open paths (health, /version) → the ``timeout``
parameter of a request that is not a watch (400, kube's request-deadline filter, which runs
before authentication) → authentication (401) → authorization (403, only with a policy) →
discovery or a resource verb, whose query options are checked before its body is read
(:mod:`pycm.sim.listoptions`, :mod:`pycm.sim.writeoptions`). Every failure is a ``v1 Status``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from pycm.sim import discovery, errors, managedfields
from pycm.sim.apply import APPLY_PATCH, apply
from pycm.sim.auth import Attributes, Authorizer, TokenAuthenticator, UserInfo, bearer_token
from pycm.sim.bodies import OBJECT_TYPES, PATCH_TYPES, decode_body, media_type
from pycm.sim.crd.conversion import served_as, stored_versions
from pycm.sim.crd.served import served_versions
from pycm.sim.gostrconv import parse_bool, parse_duration, quote
from pycm.sim.listoptions import ListOptions, list_options, watch_timeout
from pycm.sim.negotiation import METADATA, TABLE, Output, negotiate
from pycm.sim.objects import Obj
from pycm.sim.openapi import CustomSchemas, OpenAPI
from pycm.sim.pruning import warning_headers
from pycm.sim.requestinfo import RequestInfo, request_info, request_path
from pycm.sim.resources import Resource
from pycm.sim.reviews import subject_access_review, token_review
from pycm.sim.serviceaccounts import token_request
from pycm.sim.store import Store
from pycm.sim.streaming import WatchResponse, error_stream, send_watch
from pycm.sim.tables import partial_metadata, table
from pycm.sim.tokens import decode_continue
from pycm.sim.versions import parse_resource_version
from pycm.sim.watchlag import WATCH_LAG_SCOPE_KEY, lag
from pycm.sim.watchlist import watch_with_initial_events
from pycm.sim.writeoptions import delete_options, refuse_dry_run, validate_write_options
from pycm.util.escape import escape_control

__all__ = ["APIContext", "BeforeRequest", "error_response", "serve"]

log = logging.getLogger("pycm.sim")

# A hook may answer a request itself (a fault) by returning a Response, or pass with None.
BeforeRequest = Callable[[Request], Awaitable[Response | None]]

OPEN_PATHS = frozenset({"/healthz", "/readyz", "/livez", "/version"})
_HEALTH = frozenset({"/healthz", "/readyz", "/livez"})
# The writes whose query decodes into Create-, Update- or PatchOptions (with a fieldManager).
_OPTIONS_VERBS = frozenset({"create", "update", "patch"})
_INCLUDE_OBJECT = frozenset({"", "None", "Metadata", "Object"})


@dataclass
class APIContext:
    """What the handlers need; owned by the Emulator and stored on ``app.state.api``."""

    store: Store
    authenticator: TokenAuthenticator
    authorizer: Authorizer
    bookmark_interval: float = 10.0
    watch_list: bool = True  # kube's WatchList gate: watches may stream initial events
    # kube's ShardedListAndWatch gate (alpha, off): lists and watches honour shardSelector.
    sharded_list_and_watch: bool = False
    server_address: str = "127.0.0.1:0"
    # Run in order before anything else; see BeforeRequest.
    before_request: list[BeforeRequest] = field(default_factory=list)
    # Set once the server is stopping: new requests still work, watches end at once.
    stopping: bool = False
    # The custom resources' served schemas, for the OpenAPI documents (None: the CRD registry's).
    custom_schemas: CustomSchemas | None = None
    openapi: OpenAPI | None = None  # made on first use (it caches the encoded documents)


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status, headers, media_type="application/json")


def _warn(response: Response, pruned: list[str]) -> Response:
    """``response`` with a Warning header for each unknown field dropped from the body."""
    for name, value in warning_headers(pruned):
        response.headers.append(name, value)
    return response


def error_response(err: errors.APIError) -> Response:
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return _json(err.status(), err.code, headers)


async def serve(request: Request) -> Response:
    ctx: APIContext = request.app.state.api
    try:
        for hook in list(ctx.before_request):
            answer = await hook(request)
            if answer is not None:
                return answer
        return await _serve(ctx, request)
    except errors.APIError as err:
        return error_response(err)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # a bug in the emulator is a 500, never a dropped connection
        log.exception(  # the path is the client's text: escaped
            "internal error serving %s %s", request.method, escape_control(request.url.path)
        )
        return error_response(errors.internal(repr(err)))


async def _serve(ctx: APIContext, request: Request) -> Response:
    path = request_path(request.scope).rstrip("/") or "/"
    if path in _HEALTH:
        return PlainTextResponse("ok")
    if path == "/version":
        return _json(discovery.version_info())
    token = bearer_token(request.headers.get("authorization", ""))
    user = ctx.authenticator.authenticate(token) if token else None
    # Most requests have no query: parsing an empty one still costs a urllib call.
    query = dict(request.query_params) if request.scope["query_string"] else {}
    info = request_info(request.method, path, query)
    if info.verb != "watch" and query.get("timeout"):
        _check_timeout(query["timeout"])
    if user is None:
        raise errors.unauthorized()
    _authorize(ctx, user, info)
    if not info.is_resource_request:
        return _non_resource(ctx, request, path)
    res = ctx.store.registry.get(info.api_group, info.api_version, info.resource)
    if res is None or info.extra:
        raise errors.not_found(info.resource, "")
    if info.subresource and info.subresource not in res.subresources:
        raise errors.not_found(f"{info.resource}/{info.subresource}", info.name, res.group)
    if res.namespaced is False and info.namespace and info.resource != "namespaces":
        raise errors.not_found(info.resource, "")
    storage = ctx.store.registry.resources.get(res.key)
    stored_as = stored_versions(storage, res) if storage is not None else ()
    if storage is not None and stored_as:
        # A custom resource whose objects are stored at another version than the one asked
        # through (one table; kube's None conversion: only apiVersion differs).
        asked = res if storage.version != res.version else None
        answer = await _resource(ctx, request, storage, info, query, user, asked=asked)
        return served_as(answer, stored_as, res.api_version)
    return await _resource(ctx, request, res, info, query, user)


def _check_timeout(value: str) -> None:
    """kube's request-deadline filter parses ``timeout`` as a Go duration (a client's own bound
    on the request; the emulator answers well within any) and refuses what does not parse."""
    try:
        parse_duration(value)
    except ValueError as err:
        raise errors.bad_request(f"invalid timeout specified in the request URL - {err}") from None


def _authorize(ctx: APIContext, user: UserInfo, info: RequestInfo) -> None:
    if not ctx.authorizer.has_policy:
        return  # every authenticated request is allowed (Authorizer.admit), no attributes needed
    attrs = Attributes(
        user=user.name,
        groups=user.groups,
        verb=info.verb,
        resource_request=info.is_resource_request,
        api_group=info.api_group,
        resource=info.resource,
        subresource=info.subresource,
        namespace=info.namespace,
        name=info.name,
        path=info.path,
    )
    if ctx.authorizer.admit(attrs).allowed:
        return
    if info.is_resource_request:
        raise errors.forbidden(user.name, info.verb, info.resource, info.api_group, info.namespace)
    raise errors.forbidden_path(user.name, info.verb, info.path)


def _non_resource(ctx: APIContext, request: Request, path: str) -> Response:
    if request.method not in ("GET", "HEAD"):
        raise errors.method_not_allowed(request.method, path)
    registry = ctx.store.registry
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["openapi"]:
        if ctx.openapi is None:
            custom = ctx.custom_schemas or (lambda: served_versions(registry))
            ctx.openapi = OpenAPI(registry, custom)
        headers = request.headers
        return ctx.openapi.respond(path, headers.get("accept"), headers.get("if-none-match"))
    if parts == ["api"]:
        return _json(discovery.api_versions(ctx.server_address))
    if parts == ["apis"]:
        return _json(discovery.api_group_list(registry))
    body = None
    if len(parts) == 2 and parts[0] == "api":
        body = discovery.api_resource_list(registry, "", parts[1])
    elif len(parts) == 3 and parts[0] == "apis":
        body = discovery.api_resource_list(registry, parts[1], parts[2])
    elif len(parts) == 2 and parts[0] == "apis":
        groups = discovery.api_group_list(registry)["groups"]
        found = [g for g in groups if g["name"] == parts[1]]
        if found:
            return _json({"kind": "APIGroup", "apiVersion": "v1", **found[0]})
    if body is None:
        raise errors.not_found("", "")
    return _json(body)


# ---------------------------------------------------------------- bodies and options


async def _body(request: Request, accepted: Mapping[str, str] = OBJECT_TYPES) -> Any:
    return await decode_body(request, accepted)


async def _object_body(
    request: Request, res: Resource, info: RequestInfo, asked: Resource | None = None
) -> Obj:
    """The request's object; ``asked``: the version the client asked through when ``res`` is
    its storage version (a custom resource's), whose apiVersion the body may carry."""
    body = await _body(request)
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    if asked is not None and body.get("apiVersion") == asked.api_version:
        body["apiVersion"] = res.api_version
    if info.subresource == "scale":
        return body
    kind, api_version = body.get("kind"), body.get("apiVersion")
    if kind is not None and kind != res.kind:
        raise errors.bad_request(
            f"the kind in the body ({kind}) does not match the kind of the requested resource "
            f"({res.kind})"
        )
    if api_version is not None and api_version != res.api_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({res.api_version})"
        )
    meta = body.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    meta = meta or {}
    if res.namespaced and meta.get("namespace") and meta["namespace"] != info.namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if info.name and meta.get("name") and meta["name"] != info.name:
        raise errors.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL "
            f"({info.name})"
        )
    return body


def _field_manager(request: Request, query: dict[str, str]) -> str:
    """The write's field manager (validated with the write's options): ``fieldManager``, else
    the User-Agent's product (kube's prefixFromUserAgent); "" is recorded as ``unknown``."""
    manager = query.get("fieldManager", "")
    return manager or _manager_from_user_agent(request.headers.get("user-agent", ""))


# A client sends one User-Agent on every write: its manager is worked out once (bounded).
_manager_from_user_agent = functools.lru_cache(maxsize=64)(managedfields.manager_from_user_agent)


def _include_object(query: dict[str, str]) -> str:
    """A Table's ``includeObject`` (kube's ValidateTableOptions; its 400 when unknown)."""
    include = query.get("includeObject", "")
    if include not in _INCLUDE_OBJECT:
        raise errors.bad_request(
            f"Unable to convert to Table as requested: includeObject: Invalid value: "
            f"{quote(include)}: must be 'Metadata', 'Object', 'None', or empty"
        )
    return include or "Metadata"


# ---------------------------------------------------------------- verbs


def _render_one(
    ctx: APIContext, res: Resource, obj: Obj, out: Output, query: dict[str, str]
) -> Any:
    if out.mode == METADATA:
        return partial_metadata(obj, out.api_version)
    if out.mode == TABLE:
        now = ctx.store.clock.wall_ns() / 1e9
        include = _include_object(query)
        return table(
            res.strategy.printer,
            [obj],
            now,
            include,
            {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            out.api_version,
        )
    return obj


async def _resource(
    ctx: APIContext,
    request: Request,
    res: Resource,
    info: RequestInfo,
    query: dict[str, str],
    user: UserInfo,
    asked: Resource | None = None,
) -> Response:
    store = ctx.store
    verb, ns, name, sub = info.verb, info.namespace or None, info.name, info.subresource
    if not res.namespaced:
        ns = None
    if verb not in res.verbs and not (sub and verb in ("get", "update", "patch")):
        raise errors.method_not_allowed(request.method, info.path)
    if verb in ("update", "patch") and not name:
        raise errors.method_not_allowed(request.method, info.path)
    manager = ""
    if verb in _OPTIONS_VERBS:
        validate_write_options(query, verb, request.headers.get("content-type", ""))
        refuse_dry_run(query)
        manager = _field_manager(request, query)
    if verb == "create":
        if sub == "token" and ns:
            body = await _body(request)
            if not isinstance(body, dict):
                raise errors.bad_request("the body of a TokenRequest must be a JSON object")
            return _json(token_request(store, ctx.authenticator, ns, name, body), 201)
        if name:
            raise errors.method_not_allowed(request.method, info.path)
        body = await _object_body(request, res, info, asked)
        if res.plural == "tokenreviews":
            return _json(token_review(ctx.authenticator, body), 201)
        if res.plural == "subjectaccessreviews":
            return _json(subject_access_review(ctx.authorizer, body), 201)
        if res.namespaced and not ns:
            raise errors.method_not_allowed(request.method, info.path)
        pruned = res.strategy.prune(res.version, body, query.get("fieldValidation"))
        created = store.create(res, body, ns, manager=manager, refuse_resource_version=True)
        return _warn(_json(created, 201), pruned)
    if verb in ("get", "list", "watch"):
        out = negotiate(request.headers.get("accept"))
        # Checked for every read (kube parses it before serving from the cache or storage);
        # a get or list serves the current state whatever version it names.
        parse_resource_version(query.get("resourceVersion"))
        if verb == "get":
            if sub == "scale":
                return _json(store.get_scale(res, ns, name))
            return _json(
                _render_one(ctx, res, store.peek(res, ns, name) or _missing(res, name), out, query)
            )
        listing = list_options(
            query,
            verb == "watch",
            res,
            watch_list=ctx.watch_list,
            sharded=ctx.sharded_list_and_watch,
        )
        include = _include_object(query) if out.mode == TABLE else "Metadata"
        if verb == "watch":
            lag_s = request.scope.get(WATCH_LAG_SCOPE_KEY, 0.0)  # a watch-lag fault's
            return _watch(ctx, res, ns, listing, out, include, lag_s)
        return _list(ctx, res, ns, listing, out, include)
    if verb == "update":
        body = await _object_body(request, res, info, asked)
        body.setdefault("metadata", {}).setdefault("name", name)
        if sub == "scale":
            return _json(store.update_scale(res, ns, name, body, manager=manager))
        pruned = res.strategy.prune(res.version, body, query.get("fieldValidation"))
        if sub == "status":
            return _warn(_json(store.update_status(res, body, ns, manager=manager)), pruned)
        return _warn(_json(store.update(res, body, ns, manager=manager)), pruned)
    if verb == "patch" and media_type(request) == APPLY_PATCH:
        if sub == "scale":
            raise errors.bad_request("the emulator does not serve apply patches to scale")
        config = await _body(request, PATCH_TYPES)
        asked_version = asked.api_version if asked is not None else None
        if isinstance(config, dict) and asked_version and config.get("apiVersion") == asked_version:
            config["apiVersion"] = res.api_version  # the storage version's resource applies it
        dropped: list[str] = []
        obj, fresh = apply(
            store,
            res,
            ns,
            name,
            config,
            manager=manager,
            force=parse_bool(query["force"]) if "force" in query else False,
            subresource=sub,
            field_validation=query.get("fieldValidation"),
            pruned=dropped,
        )
        return _warn(_json(obj, 201 if fresh else 200), dropped)
    if verb == "patch":
        patch = await _body(request, PATCH_TYPES)
        if patch is None:
            raise errors.bad_request("the body of the request was empty: a patch is required")
        content_type = request.headers.get("content-type", "")
        dropped = []
        patched = store.patch(
            res,
            ns,
            name,
            content_type,
            patch,
            sub,
            query.get("fieldValidation"),
            dropped,
            manager=manager,
        )
        return _warn(_json(patched), dropped)
    if verb == "delete":
        options = delete_options(await _body(request), query)
        obj, removed = store.delete(res, ns, name, options)
        if removed and not res.strategy.return_deleted_object:
            details = {"name": name, "kind": res.plural, "uid": obj["metadata"].get("uid")}
            if res.group:
                details["group"] = res.group
            body = errors.status_object(200, "", "", details)
            del body["message"]  # (a reason of "" is left out already)
            return _json(body)
        return _json(obj)
    if verb == "deletecollection":
        # kube decodes the list options before the delete options.
        selection = list_options(query, False, res, sharded=ctx.sharded_list_and_watch)
        options = delete_options(await _body(request), query)
        items = store.delete_collection(
            res, ns, selection.labels, selection.fields, options, selection.shards
        )
        return _json(
            {
                "kind": f"{res.kind}List",
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": str(store.resource_version)},
                "items": items,
            }
        )
    raise errors.method_not_allowed(request.method, info.path)


def _missing(res: Resource, name: str) -> Obj:
    raise errors.not_found(res.plural, name, res.group)


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
        return _json(table(printer, page.items, now, include, list_meta, out.api_version))
    if out.mode == METADATA:
        items = [partial_metadata(o, out.api_version) for o in page.items]
        return _json(
            {
                "kind": "PartialObjectMetadataList",
                "apiVersion": out.api_version,
                "metadata": list_meta,
                "items": items,
            }
        )
    return _json(
        {
            "kind": f"{res.kind}List",
            "apiVersion": res.api_version,
            "metadata": list_meta,
            "items": page.items,
        }
    )


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
