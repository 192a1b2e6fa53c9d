"""The REST handlers: one Starlette endpoint serving every kube-style path.

Order of one request (the fault engineer's hooks run first, so an injected failure needs no
credentials): ``before_request`` hooks → open paths (health, /version) → the ``timeout``
parameter of a request that is not a watch (400, kube's request-deadline filter, which runs
before authentication) → authentication (401) → authorization (403, only with a policy) →
discovery or a resource verb, whose query options are checked before its body is read
(:mod:`pycm.sim.listoptions`, :mod:`pycm.sim.writeoptions`). Every failure is a ``v1 Status``.

The reads (get, list, watch) are :mod:`pycm.sim.reads`; what the handlers share is
:class:`~pycm.sim.apicontext.APIContext` (re-exported here), and their responses
:mod:`pycm.sim.responses`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from pycm.sim import discovery, errors, managedfields
from pycm.sim.apicontext import APIContext, BeforeRequest
from pycm.sim.apply import APPLY_PATCH, apply
from pycm.sim.auth import Attributes, UserInfo, bearer_token
from pycm.sim.bodies import OBJECT_TYPES, PATCH_TYPES, decode_body, media_type
from pycm.sim.crd.conversion import acting_as, served_as, stored_versions
from pycm.sim.crd.served import served_versions
from pycm.sim.gostrconv import parse_bool, parse_duration
from pycm.sim.listoptions import list_options
from pycm.sim.objects import Obj
from pycm.sim.openapi import OpenAPI
from pycm.sim.reads import read
from pycm.sim.requestinfo import RequestInfo, request_info, request_path
from pycm.sim.resources import Resource
from pycm.sim.responses import error_response, json_response, with_warnings
from pycm.sim.reviews import subject_access_review, token_review
from pycm.sim.serviceaccounts import token_request
from pycm.sim.writeoptions import delete_options, refuse_dry_run, validate_write_options
from pycm.util.escape import escape_control

__all__ = ["APIContext", "BeforeRequest", "error_response", "serve"]

log = logging.getLogger("pycm.sim")

OPEN_PATHS = frozenset({"/healthz", "/readyz", "/livez", "/version"})
_HEALTH = frozenset({"/healthz", "/readyz", "/livez"})
# The writes whose query decodes into Create-, Update- or PatchOptions (with a fieldManager).
_OPTIONS_VERBS = frozenset({"create", "update", "patch"})


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
        return json_response(discovery.version_info())
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
        serving = acting_as(storage, asked)  # the asked version's schema, columns, subresources
        answer = await _resource(ctx, request, serving, info, query, user, asked=asked)
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
        return json_response(discovery.api_versions(ctx.server_address))
    if parts == ["apis"]:
        return json_response(discovery.api_group_list(registry))
    body = None
    if len(parts) == 2 and parts[0] == "api":
        body = discovery.api_resource_list(registry, "", parts[1])
    elif len(parts) == 3 and parts[0] == "apis":
        body = discovery.api_resource_list(registry, parts[1], parts[2])
    elif len(parts) == 2 and parts[0] == "apis":
        groups = discovery.api_group_list(registry)["groups"]
        found = [g for g in groups if g["name"] == parts[1]]
        if found:
            return json_response({"kind": "APIGroup", "apiVersion": "v1", **found[0]})
    if body is None:
        raise errors.not_found("", "")
    return json_response(body)


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


# ---------------------------------------------------------------- verbs


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
            return json_response(token_request(store, ctx.authenticator, ns, name, body), 201)
        if name:
            raise errors.method_not_allowed(request.method, info.path)
        body = await _object_body(request, res, info, asked)
        if res.plural == "tokenreviews":
            return json_response(token_review(ctx.authenticator, body), 201)
        if res.plural == "subjectaccessreviews":
            return json_response(subject_access_review(ctx.authorizer, body), 201)
        if res.namespaced and not ns:
            raise errors.method_not_allowed(request.method, info.path)
        pruned = res.strategy.prune(res.version, body, query.get("fieldValidation"))
        created = store.create(res, body, ns, manager=manager, refuse_resource_version=True)
        return with_warnings(json_response(created, 201), pruned)
    if verb in ("get", "list", "watch"):
        return read(ctx, request, res, verb, ns, name, sub, query)
    if verb == "update":
        body = await _object_body(request, res, info, asked)
        body.setdefault("metadata", {}).setdefault("name", name)
        if sub == "scale":
            return json_response(store.update_scale(res, ns, name, body, manager=manager))
        pruned = res.strategy.prune(res.version, body, query.get("fieldValidation"))
        if sub == "status":
            updated = store.update_status(res, body, ns, manager=manager)
            return with_warnings(json_response(updated), pruned)
        return with_warnings(json_response(store.update(res, body, ns, manager=manager)), pruned)
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
        return with_warnings(json_response(obj, 201 if fresh else 200), dropped)
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
        return with_warnings(json_response(patched), dropped)
    if verb == "delete":
        options = delete_options(await _body(request), query)
        obj, removed = store.delete(res, ns, name, options)
        if removed and not res.strategy.return_deleted_object:
            details = {"name": name, "kind": res.plural, "uid": obj["metadata"].get("uid")}
            if res.group:
                details["group"] = res.group
            body = errors.status_object(200, "", "", details)
            del body["message"]  # (a reason of "" is left out already)
            return json_response(body)
        return json_response(obj)
    if verb == "deletecollection":
        # kube decodes the list options before the delete options.
        selection = list_options(query, False, res, sharded=ctx.sharded_list_and_watch)
        options = delete_options(await _body(request), query)
        items = store.delete_collection(
            res, ns, selection.labels, selection.fields, options, selection.shards
        )
        return json_response(
            {
                "kind": res.list_kind,
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": str(store.resource_version)},
                "items": items,
            }
        )
    raise errors.method_not_allowed(request.method, info.path)
