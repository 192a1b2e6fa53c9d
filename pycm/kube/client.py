"""The async API client: Kubernetes verbs over one httpx client, plain dicts in and out.

Each verb builds an :class:`~pycm.kube.request.ApiRequest` (:mod:`pycm.kube.request`: the verb,
path, query, body, Accept; :class:`~pycm.kube.request.ListOptions` for a list's or a watch's
query) and sends it through the one send path every request takes (:mod:`pycm.kube.send`:
rate limiter, headers and credentials, write fence, Retry-After retries, metrics and the
``api.request`` trace point), as httpx's ``build_request`` → ``send``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pycm.api.labels import Selector
from pycm.kube.config import ClientConfig
from pycm.kube.errors import Expired
from pycm.kube.fence import WriteFence
from pycm.kube.request import (
    ACCEPT_JSON,
    ACCEPT_METADATA,
    ACCEPT_METADATA_LIST,
    DEFAULT_PAGE_SIZE,
    WATCH_READ_MARGIN,
    ApiRequest,
    ListOptions,
    PatchType,
    delete_options,
    list_request,
    obj_namespace,
    put_param,
    selector_param,
    watch_request,
    write_params,
    write_request,
)
from pycm.kube.resources import Resource
from pycm.kube.response import GC_PAUSE_BYTES, ListResult, Response, decode_json
from pycm.kube.send import MAX_RETRIES, RateLimiter, Sender
from pycm.kube.transport import build_ssl_context
from pycm.kube.watch import Watch

__all__ = [
    "ACCEPT_JSON",
    "ACCEPT_METADATA",
    "ACCEPT_METADATA_LIST",
    "DEFAULT_PAGE_SIZE",
    "GC_PAUSE_BYTES",
    "MAX_RETRIES",
    "WATCH_READ_MARGIN",
    "Client",
    "ListOptions",
    "ListResult",
    "PatchType",
    "RateLimiter",
    "Response",
    "WriteFence",
    "decode_json",
]

Obj = dict[str, Any]


class Client(Sender):
    """An API client for one configuration.

    Build it with :meth:`connect` (which reads TLS files in a thread), or directly with a test
    ``transport`` (an ``httpx.MockTransport``). Close it with :meth:`aclose` or ``async with``.
    :meth:`with_user_agent` gives a per-controller client sharing the connection pool but with
    its own user agent and its own rate limiter (as each KCM controller's clientset has).
    The constructor's arguments are :class:`~pycm.kube.send.Sender`'s.
    """

    @classmethod
    async def connect(cls, config: ClientConfig, **kwargs: Any) -> Client:
        """A client whose TLS context is built (files read) in a thread."""
        ssl_context = None
        if config.server.startswith("https"):
            ssl_context = await asyncio.to_thread(build_ssl_context, config)
        return cls(config, ssl_context=ssl_context, **kwargs)

    def with_user_agent(self, user_agent: str) -> Client:
        """A client sharing this one's connections, with its own user agent and rate limiter
        (and this one's fence: a fenced client's derivatives stay fenced)."""
        config = self.config.with_overrides(user_agent=user_agent)
        return Client(
            config,
            bus=self._bus,
            registry=self._registry,
            clock=self._clock,
            max_retries=self._max_retries,
            fence=self.fence,
            _http=self._http,
            _watch_http=self._watch_http,
            _auth=self._auth,
        )

    def with_fence(self, fence: WriteFence | None) -> Client:
        """The same client — user agent, connections, credentials and rate limiter shared —
        whose writes pass ``fence`` right before they are sent (a leader-elected controller's;
        its event recorder keeps the unfenced one)."""
        return Client(
            self.config,
            rate_limiter=self._limiter,
            bus=self._bus,
            registry=self._registry,
            clock=self._clock,
            max_retries=self._max_retries,
            fence=fence,
            _http=self._http,
            _watch_http=self._watch_http,
            _auth=self._auth,
        )

    # --- verbs: each builds its request and sends it --------------------------------------

    async def get(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = "",
        subresource: str = "",
        resource_version: str | None = None,
        metadata_only: bool = False,
    ) -> Obj:
        params = {"resourceVersion": resource_version} if resource_version is not None else {}
        return await self._json(
            ApiRequest(
                "get",
                "GET",
                res.path(namespace, name, subresource),
                res.resource,
                subresource,
                namespace or "",
                name,
                params=params,
                accept=ACCEPT_METADATA if metadata_only else ACCEPT_JSON,
            )
        )

    async def list(
        self,
        res: Resource,
        *,
        namespace: str | None = "",
        label_selector: str | Selector | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        metadata_only: bool = False,
        shard_selector: str | None = None,
        options: ListOptions | None = None,
    ) -> Obj:
        """One page: the List object as sent (``items``, ``metadata.continue``, ...).

        The query is the keywords or ``options`` (a :class:`~pycm.kube.request.ListOptions`,
        whose watch-only fields a list ignores), not both. ``shard_selector`` is KEP-5866's
        (``pycm.api.sharding``): a server with the ShardedListAndWatch gate filters by it and
        says so in ``metadata.shardInfo``; one without it ignores the parameter and sends
        everything."""
        query = _query(
            "list",
            options,
            label_selector=label_selector,
            field_selector=field_selector,
            shard_selector=shard_selector,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )
        return await self._json(list_request(res, namespace, query, metadata_only))

    async def list_raw(
        self,
        res: Resource,
        *,
        namespace: str | None = "",
        label_selector: str | Selector | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        metadata_only: bool = False,
        shard_selector: str | None = None,
        options: ListOptions | None = None,
    ) -> bytes:
        """One page as the bytes the server sent, for a caller with its own decoder (the
        informers' :class:`~pycm.cache.sharing_decoder.SharingDecoder`): same request, same
        errors, events and metrics as :meth:`list`."""
        query = _query(
            "list_raw",
            options,
            label_selector=label_selector,
            field_selector=field_selector,
            shard_selector=shard_selector,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )
        resp = await self._send(list_request(res, namespace, query, metadata_only))
        return resp.content

    async def list_all(
        self,
        res: Resource,
        *,
        namespace: str | None = "",
        label_selector: str | Selector | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        metadata_only: bool = False,
        shard_selector: str | None = None,
        options: ListOptions | None = None,
    ) -> ListResult:
        """Every item, following ``continue`` (client-go's pager), ``page_size`` a page (the
        pager's own: ``options``' limit and continue token are not used). If a continue token
        expires mid-way (410), the list is redone in one unpaged request, as the pager's
        FullListIfExpired does."""
        query = _query(
            "list_all",
            options,
            label_selector=label_selector,
            field_selector=field_selector,
            shard_selector=shard_selector,
            resource_version=resource_version,
        )
        items: list[Obj] = []
        token: str | None = None
        pages = 0
        while True:
            page_query = dataclasses.replace(
                query,
                limit=page_size,
                continue_=token,
                resource_version=None if token else query.resource_version,
            )
            try:
                page = await self._json(list_request(res, namespace, page_query, metadata_only))
            except Expired:
                if token is None:
                    raise
                whole = dataclasses.replace(query, limit=None, continue_=None)
                page = await self._json(list_request(res, namespace, whole, metadata_only))
                items = []
                token = None
            pages += 1
            items.extend(page.get("items") or ())
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if not token:
                return ListResult(items, str(meta.get("resourceVersion") or ""), pages)

    def watch(
        self,
        res: Resource,
        *,
        namespace: str | None = "",
        label_selector: str | Selector | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        allow_watch_bookmarks: bool | None = None,
        timeout_seconds: int | None = None,
        send_initial_events: bool | None = None,
        resource_version_match: str | None = None,
        metadata_only: bool = False,
        shard_selector: str | None = None,
        options: ListOptions | None = None,
    ) -> Watch:
        """``async with client.watch(PODS, resource_version=rv) as w: async for ev in w: ...``

        The query is the keywords or ``options``, not both; bookmarks are asked for unless
        ``allow_watch_bookmarks`` is False. A streaming list (WatchList) is
        ``send_initial_events=True`` with ``resource_version_match="NotOlderThan"`` (the server
        requires both)."""
        query = _query(
            "watch",
            options,
            label_selector=label_selector,
            field_selector=field_selector,
            shard_selector=shard_selector,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            allow_watch_bookmarks=allow_watch_bookmarks,
            timeout_seconds=timeout_seconds,
            send_initial_events=send_initial_events,
        )
        request = watch_request(res, namespace, query, metadata_only, self.config.timeout)

        async def open_stream() -> Any:
            return await self._send(request)

        return Watch(open_stream)

    async def create(
        self,
        res: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> Obj:
        ns = namespace if namespace is not None else obj_namespace(obj)
        params = write_params(dry_run, field_manager)
        return await self._json(write_request("create", "POST", res, ns, obj, params=params), obj)

    async def update(
        self,
        res: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> Obj:
        """PUT the whole object (its metadata.resourceVersion is the optimistic-lock check)."""
        ns = namespace if namespace is not None else obj_namespace(obj)
        name = str((obj.get("metadata") or {}).get("name") or "")
        if not name:
            raise ValueError("update needs metadata.name")
        request = write_request(
            "update",
            "PUT",
            res,
            ns,
            obj,
            name=name,
            subresource=subresource,
            params=write_params(dry_run, field_manager),
        )
        return await self._json(request, obj)

    async def update_status(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Obj:
        return await self.update(res, obj, namespace=namespace, subresource="status")

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        namespace: str | None = "",
        patch_type: PatchType = PatchType.MERGE,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> Obj:
        """A merge (default), strategic-merge, JSON (a list of operations) or apply patch."""
        if patch_type is PatchType.JSON and not isinstance(patch, Sequence):
            raise TypeError("a JSON patch is a list of operations")
        if patch_type is PatchType.APPLY and not field_manager:
            raise ValueError("an apply patch needs a field_manager")
        params = write_params(dry_run, field_manager)
        if force is not None:
            params["force"] = "true" if force else "false"
        request = write_request(
            "patch",
            "PATCH",
            res,
            namespace,
            patch,
            name=name,
            subresource=subresource,
            params=params,
            content_type=patch_type.value,
        )
        return await self._json(request, patch)

    async def apply(
        self,
        res: Resource,
        obj: Mapping[str, Any],
        *,
        field_manager: str,
        force: bool = False,
        namespace: str | None = None,
        subresource: str = "",
        dry_run: bool = False,
    ) -> Obj:
        """Server-side apply: PATCH ``obj`` (the fields this manager owns, as a whole) with
        ``application/apply-patch+yaml`` as ``field_manager``; ``force`` takes fields another
        manager owns instead of failing with a 409 conflict naming them. ``apiVersion`` and
        ``kind`` default to the resource's (apply requires both in the body)."""
        if not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        name = str((obj.get("metadata") or {}).get("name") or "")
        if not name:
            raise ValueError("server-side apply needs metadata.name")
        body = {"apiVersion": res.api_version, "kind": res.kind, **obj}
        ns = namespace if namespace is not None else obj_namespace(obj)
        return await self.patch(
            res,
            name,
            body,
            namespace=ns,
            patch_type=PatchType.APPLY,
            subresource=subresource,
            dry_run=dry_run,
            field_manager=field_manager,
            force=force,
        )

    async def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = "",
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """DELETE with DeleteOptions; returns what the server sends (the object or a Status)."""
        body = delete_options(
            uid, resource_version, propagation_policy, grace_period_seconds, dry_run
        )
        request = write_request("delete", "DELETE", res, namespace, body, name=name)
        return await self._json(request, body)

    async def delete_collection(
        self,
        res: Resource,
        *,
        namespace: str | None = "",
        label_selector: str | Selector | None = None,
        field_selector: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Obj:
        params: dict[str, str] = {}
        put_param(params, "labelSelector", selector_param(label_selector))
        put_param(params, "fieldSelector", field_selector)
        body = delete_options(None, None, propagation_policy, grace_period_seconds, False)
        request = write_request("deletecollection", "DELETE", res, namespace, body, params=params)
        return await self._json(request, body)

    async def get_scale(self, res: Resource, name: str, *, namespace: str = "") -> Obj:
        return await self.get(res, name, namespace=namespace, subresource="scale")

    async def update_scale(
        self, res: Resource, name: str, scale: Mapping[str, Any], *, namespace: str = ""
    ) -> Obj:
        request = write_request(
            "update", "PUT", res, namespace, scale, name=name, subresource="scale"
        )
        return await self._json(request, scale)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        content: bytes | None = None,
        content_type: str | None = None,
        accept: str = "*/*",
        verb: str = "",
    ) -> Response:
        """A raw request (discovery, /healthz, /version); error statuses raise as usual."""
        sent = ApiRequest(
            verb or method.lower(),
            method.upper(),
            path,
            params=dict(params or {}),
            content=content,
            accept=accept,
            content_type=content_type,
        )
        resp = await self._send(sent)
        return Response(resp.status_code, resp.headers, resp.content)


def _query(caller: str, options: ListOptions | None, **keywords: Any) -> ListOptions:
    """The query of a list or watch: ``options``, or the keywords (unset ones are None)."""
    if options is None:
        if keywords.get("allow_watch_bookmarks", True) is None:
            keywords["allow_watch_bookmarks"] = True
        return ListOptions(**keywords)
    given = sorted(key for key, value in keywords.items() if value is not None)
    if given:
        raise TypeError(f"{caller}() takes options or query keywords, not both: {', '.join(given)}")
    return options
