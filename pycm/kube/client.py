"""The async API client: Kubernetes verbs over one httpx client, plain dicts in and out.

Every request goes through the same pipeline (:meth:`Client._send`):

1. the client-side rate limiter (``--kube-api-qps`` / ``--kube-api-burst``; a token bucket;
   the seconds waited are measured) — watch requests too, but not the stream once open;
2. headers: User-Agent, Accept (metadata-only requests ask for PartialObjectMetadata and fall
   back to plain JSON), Authorization (token files re-read for rotation), ``traceparent`` when
   inside a trace step — sampled (flag 01) only in the traces the manager exports by ratio
   (:class:`pycm.util.sampling.TraceIdRatio` at ``trace_sample_ratio``), 00 otherwise;
3. the request, with the config's timeout (watch streams use ``timeoutSeconds`` plus a read
   margin instead); watch requests go through a second httpx client over the wire transport
   (:mod:`pycm.kube.wire`: one connection per watch, the body read in bulk), unless the client
   was given a transport of its own (a test's) or no TLS context to reuse;
   A mutating request (POST, PUT, PATCH, DELETE) of a client with a :class:`WriteFence`
   (a leader-elected controller's: the elector's renew gate) passes the fence before it is
   built and again at the moment it is written to the connection (httpcore's ``trace`` hook:
   before the request headers, and before the body) — each retry too — or raises
   :class:`~pycm.kube.errors.FencedError`: refused before the headers, nothing was sent;
   before the body, the connection is closed on a request the server never completes;
4. a 429 — or a 5xx — carrying Retry-After is retried after that many seconds, up to
   :data:`MAX_RETRIES` times (client-go's ``checkWait``), each retry through the limiter again;
5. the whole body is decoded with one ``orjson.loads`` (no per-item work);
6. one ``api.request`` trace point (:class:`~pycm.trace.kinds.ApiRequestCompleted`) and
   client-go's ``rest_client_*`` metrics.
"""

from __future__ import annotations

import asyncio
import enum
import gc
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

import httpx
import orjson
from prometheus_client import CollectorRegistry

from pycm.api.labels import Selector
from pycm.kube.auth import Authenticator
from pycm.kube.config import ClientConfig
from pycm.kube.errors import (
    Expired,
    FencedError,
    KubeError,
    Timeout,
    TransportError,
    error_from_response,
    parse_retry_after,
)
from pycm.kube.metrics import ClientMetrics, client_metrics
from pycm.kube.resources import Resource
from pycm.kube.transport import build_http_client, build_ssl_context, build_watch_client
from pycm.kube.watch import Watch
from pycm.trace.bus import Bus, default_bus
from pycm.trace.context import current_span, error_text, get_span, new_span_id, note_call
from pycm.trace.kinds import ApiRequestCompleted
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.ratelimit import TokenBucket
from pycm.util.sampling import TraceIdRatio

__all__ = [
    "ACCEPT_JSON",
    "ACCEPT_METADATA",
    "ACCEPT_METADATA_LIST",
    "DEFAULT_PAGE_SIZE",
    "GC_PAUSE_BYTES",
    "MAX_RETRIES",
    "WATCH_READ_MARGIN",
    "Client",
    "ListResult",
    "PatchType",
    "RateLimiter",
    "Response",
    "WriteFence",
    "decode_json",
]

Obj = dict[str, Any]

ACCEPT_JSON = "application/json"
ACCEPT_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
ACCEPT_METADATA_LIST = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)
# client-go retries a request answered with Retry-After at most 10 times.
MAX_RETRIES = 10
# client-go's pager asks for 500 items a page.
DEFAULT_PAGE_SIZE = 500
# A watch's read timeout is its timeoutSeconds plus this margin, so the server ends it first.
WATCH_READ_MARGIN = 30.0
# With --kube-api-qps 0, client-go uses 5 qps, burst 10.
_DEFAULT_QPS, _DEFAULT_BURST = 5.0, 10


# Bodies at least this large are decoded with the cyclic GC paused (see decode_json).
GC_PAUSE_BYTES = 256 * 1024


def decode_json(content: bytes) -> Any:
    """One ``orjson.loads`` of the whole body.

    For large bodies the cyclic GC is paused for the duration: decoding a 10k-pod list
    allocates hundreds of thousands of dicts, each allocation burst triggers collections that
    traverse the young objects (and, as they survive, the older generations) for nothing —
    a decoded document holds no cycles. Pausing halves to thirds the decode time here. The
    pause is synchronous (no await inside), so no other task runs while it lasts.
    """
    if len(content) < GC_PAUSE_BYTES or not gc.isenabled():
        return orjson.loads(content)
    gc.disable()
    try:
        return orjson.loads(content)
    finally:
        gc.enable()


class RateLimiter(Protocol):
    """The subset of a token bucket the client uses."""

    async def wait(self) -> float:
        """Wait for a token; return the seconds waited."""
        ...


class WriteFence(Protocol):
    """What a leader-elected client checks before each write leaves (the leader elector's
    renew gate, :class:`pycm.leaderelection.gate.RenewGate`): open while the last lease renew
    is younger than the renew deadline by the local monotonic clock."""

    renew_deadline: float

    def is_open(self) -> bool: ...

    def age(self) -> float | None:
        """Seconds since the last renew began; None when not leading."""
        ...


# The HTTP methods that change state: a fenced client checks its fence before each of them.
_MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# httpcore's trace points at which a fenced write is checked once more: the last moments before
# the request's bytes are written (a pause, or a new connection's handshake, may fall between
# the first check and these).
_SEND_POINTS = frozenset(
    {"http11.send_request_headers.started", "http11.send_request_body.started"}
)


class PatchType(enum.StrEnum):
    """The patch flavours, by the Content-Type that names them."""

    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    JSON = "application/json-patch+json"
    APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True, slots=True)
class ListResult:
    """All items of a (possibly paged) list, and the list's resourceVersion to watch from."""

    items: list[Obj]
    resource_version: str
    pages: int = 1


@dataclass(frozen=True, slots=True)
class Response:
    """A raw response (from :meth:`Client.request`)."""

    code: int
    headers: httpx.Headers
    content: bytes

    def json(self) -> Any:
        return decode_json(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


_WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})
_Written = list[Any]  # (a module-level name: in Client's body, ``list`` is its method)


@dataclass(frozen=True, slots=True)
class _Call:
    """What a request is, for its trace event."""

    verb: str
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def _limiter_for(config: ClientConfig, clock: Clock) -> TokenBucket | None:
    if config.qps < 0:
        return None
    qps, burst = (config.qps, config.burst) if config.qps > 0 else (_DEFAULT_QPS, _DEFAULT_BURST)
    return TokenBucket(qps if qps != math.inf else math.inf, max(1, burst), clock=clock)


def _selector(value: str | Selector | None) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else value.to_string()


class Client:
    """An API client for one configuration.

    Build it with :meth:`connect` (which reads TLS files in a thread), or directly with a test
    ``transport`` (an ``httpx.MockTransport``). Close it with :meth:`aclose` or ``async with``.
    :meth:`with_user_agent` gives a per-controller client sharing the connection pool but with
    its own user agent and its own rate limiter (as each KCM controller's clientset has).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        ssl_context: Any = None,
        rate_limiter: RateLimiter | None = None,
        bus: Bus | None = None,
        registry: CollectorRegistry | None = None,
        clock: Clock = REAL_CLOCK,
        max_retries: int = MAX_RETRIES,
        fence: WriteFence | None = None,
        _http: httpx.AsyncClient | None = None,
        _watch_http: httpx.AsyncClient | None = None,
        _auth: Authenticator | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self._http = _http or build_http_client(
            config, ssl_context=ssl_context, transport=transport
        )
        self._owns_http = _http is None
        # Watch streams go through the wire transport (bulk reads; see pycm.kube.wire) when
        # requests go over the network as configured; a test transport serves them too.
        if _http is None and transport is None:
            _watch_http = build_watch_client(config, ssl_context)
        self._watch_http = _watch_http
        self._limiter: RateLimiter | None = (
            rate_limiter if rate_limiter is not None else _limiter_for(config, clock)
        )
        self._bus = bus
        self._registry = registry
        self._metrics: ClientMetrics = client_metrics(registry)
        # Shared with the clients made by with_user_agent: one token cache, so a rotated token
        # found after one client's 401 serves them all (none has to fail a request first).
        self._auth = _auth or Authenticator(config, clock)
        self._max_retries = max_retries
        # Checked right before each mutating request is sent (None: never fenced).
        self.fence = fence
        self._trace_sampled = TraceIdRatio(config.trace_sample_ratio).sampled
        self.host = httpx.URL(config.server).netloc.decode("ascii")
        self._extensions: dict[str, Any] = (
            {"sni_hostname": config.tls_server_name} if config.tls_server_name else {}
        )
        # The field manager the server records this client's writes as (its user agent's
        # product): its events are this manager's own, never an outside writer's.
        self._manager = config.user_agent.split("/", 1)[0]
        (bus or default_bus()).causes.own_managers.add(self._manager)

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

    @property
    def bus(self) -> Bus:
        """The trace bus this client's requests are traced on (helpers that write through
        it trace what they did on the same one)."""
        return self._bus or default_bus()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()
            if self._watch_http is not None:
                await self._watch_http.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # --- verbs ---------------------------------------------------------------------------

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
            _Call("get", res.resource, subresource, namespace or "", name),
            "GET",
            res.path(namespace, name, subresource),
            params=params,
            accept=ACCEPT_METADATA if metadata_only else ACCEPT_JSON,
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
    ) -> Obj:
        """One page: the List object as sent (``items``, ``metadata.continue``, ...).

        ``shard_selector`` is KEP-5866's (``pycm.api.sharding``): a server with the
        ShardedListAndWatch gate filters by it and says so in ``metadata.shardInfo``; one
        without it ignores the parameter and sends everything."""
        call, path, params, accept = self._list_request(
            res,
            namespace,
            label_selector,
            field_selector,
            limit,
            continue_,
            resource_version,
            resource_version_match,
            metadata_only,
            shard_selector,
        )
        return await self._json(call, "GET", path, params=params, accept=accept)

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
    ) -> bytes:
        """One page as the bytes the server sent, for a caller with its own decoder (the
        informers' :class:`~pycm.cache.sharing_decoder.SharingDecoder`): same request, same
        errors, events and metrics as :meth:`list`."""
        call, path, params, accept = self._list_request(
            res,
            namespace,
            label_selector,
            field_selector,
            limit,
            continue_,
            resource_version,
            resource_version_match,
            metadata_only,
            shard_selector,
        )
        resp = await self._send(call, "GET", path, params, None, accept, None, None, False)
        return resp.content

    @staticmethod
    def _list_request(
        res: Resource,
        namespace: str | None,
        label_selector: str | Selector | None,
        field_selector: str | None,
        limit: int | None,
        continue_: str | None,
        resource_version: str | None,
        resource_version_match: str | None,
        metadata_only: bool,
        shard_selector: str | None = None,
    ) -> tuple[_Call, str, dict[str, str], str]:
        params: dict[str, str] = {}
        _put(params, "labelSelector", _selector(label_selector))
        _put(params, "fieldSelector", field_selector)
        _put(params, "shardSelector", shard_selector)
        _put(params, "limit", str(limit) if limit else None)
        _put(params, "continue", continue_)
        _put(params, "resourceVersion", resource_version)
        _put(params, "resourceVersionMatch", resource_version_match)
        return (
            _Call("list", res.resource, "", namespace or ""),
            res.path(namespace),
            params,
            ACCEPT_METADATA_LIST if metadata_only else ACCEPT_JSON,
        )

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
    ) -> ListResult:
        """Every item, following ``continue`` (client-go's pager). If a continue token expires
        mid-way (410), the list is redone in one unpaged request, as the pager's
        FullListIfExpired does."""
        items: list[Obj] = []
        token: str | None = None
        pages = 0
        common: dict[str, Any] = {
            "namespace": namespace,
            "label_selector": label_selector,
            "field_selector": field_selector,
            "metadata_only": metadata_only,
            "shard_selector": shard_selector,
        }
        while True:
            try:
                page = await self.list(
                    res,
                    limit=page_size,
                    continue_=token,
                    resource_version=None if token else resource_version,
                    **common,
                )
            except Expired:
                if token is None:
                    raise
                page = await self.list(res, resource_version=resource_version, **common)
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
        allow_watch_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        send_initial_events: bool | None = None,
        resource_version_match: str | None = None,
        metadata_only: bool = False,
        shard_selector: str | None = None,
    ) -> Watch:
        """``async with client.watch(PODS, resource_version=rv) as w: async for ev in w: ...``

        A streaming list (WatchList) is ``send_initial_events=True`` with
        ``resource_version_match="NotOlderThan"`` (the server requires both)."""
        params: dict[str, str] = {"watch": "true"}
        _put(params, "labelSelector", _selector(label_selector))
        _put(params, "fieldSelector", field_selector)
        _put(params, "shardSelector", shard_selector)
        _put(params, "resourceVersion", resource_version)
        _put(params, "resourceVersionMatch", resource_version_match)
        if allow_watch_bookmarks:
            params["allowWatchBookmarks"] = "true"
        if timeout_seconds is not None:
            params["timeoutSeconds"] = str(int(timeout_seconds))
        if send_initial_events is not None:
            params["sendInitialEvents"] = "true" if send_initial_events else "false"
        read = timeout_seconds + WATCH_READ_MARGIN if timeout_seconds else None
        connect = self.config.timeout
        timeout = httpx.Timeout(connect=connect, read=read, write=connect, pool=connect)
        call = _Call("watch", res.resource, "", namespace or "")
        path = res.path(namespace)
        accept = ACCEPT_METADATA if metadata_only else ACCEPT_JSON

        async def open_stream() -> httpx.Response:
            return await self._send(call, "GET", path, params, None, accept, None, timeout, True)

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
        ns = namespace if namespace is not None else _obj_namespace(obj)
        return await self._json(
            _Call("create", res.resource, "", ns),
            "POST",
            res.path(ns),
            params=_write_params(dry_run, field_manager),
            body=obj,
        )

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
        ns = namespace if namespace is not None else _obj_namespace(obj)
        name = str((obj.get("metadata") or {}).get("name") or "")
        if not name:
            raise ValueError("update needs metadata.name")
        return await self._json(
            _Call("update", res.resource, subresource, ns, name),
            "PUT",
            res.path(ns, name, subresource),
            params=_write_params(dry_run, field_manager),
            body=obj,
        )

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
        params = _write_params(dry_run, field_manager)
        if force is not None:
            params["force"] = "true" if force else "false"
        return await self._json(
            _Call("patch", res.resource, subresource, namespace or "", name),
            "PATCH",
            res.path(namespace, name, subresource),
            params=params,
            body=patch,
            content_type=patch_type.value,
        )

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
        ns = namespace if namespace is not None else _obj_namespace(obj)
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
        return await self._json(
            _Call("delete", res.resource, "", namespace or "", name),
            "DELETE",
            res.path(namespace, name),
            body=_delete_options(
                uid, resource_version, propagation_policy, grace_period_seconds, dry_run
            ),
        )

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
        _put(params, "labelSelector", _selector(label_selector))
        _put(params, "fieldSelector", field_selector)
        return await self._json(
            _Call("deletecollection", res.resource, "", namespace or ""),
            "DELETE",
            res.path(namespace),
            params=params,
            body=_delete_options(None, None, propagation_policy, grace_period_seconds, False),
        )

    async def get_scale(self, res: Resource, name: str, *, namespace: str = "") -> Obj:
        return await self.get(res, name, namespace=namespace, subresource="scale")

    async def update_scale(
        self, res: Resource, name: str, scale: Mapping[str, Any], *, namespace: str = ""
    ) -> Obj:
        return await self._json(
            _Call("update", res.resource, "scale", namespace or "", name),
            "PUT",
            res.path(namespace, name, "scale"),
            body=scale,
        )

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
        resp = await self._send(
            _Call(verb or method.lower()),
            method.upper(),
            path,
            dict(params or {}),
            content,
            accept,
            content_type,
            None,
            False,
        )
        return Response(resp.status_code, resp.headers, resp.content)

    # --- the pipeline --------------------------------------------------------------------

    async def _json(
        self,
        call: _Call,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        accept: str = ACCEPT_JSON,
        content_type: str = "application/json",
    ) -> Obj:
        content = orjson.dumps(body) if body is not None else None
        # A write's response is decoded in _send, which notes its resourceVersion (the cause
        # of the watch event it will bring: pycm.trace.causes) before its trace point.
        written: _Written | None = None
        in_flight = None
        if call.verb in _WRITE_VERBS:
            written = []
            in_flight = self._write_started(call, body, params)
        try:
            resp = await self._send(
                call,
                method,
                path,
                params or {},
                content,
                accept,
                content_type if content is not None else None,
                None,
                False,
                written,
            )
        finally:
            if in_flight is not None:
                (self._bus or default_bus()).causes.write_ended(in_flight)
        if not written:
            written = [decode_json(resp.content) if resp.content else {}]
        decoded = written[0]
        if not isinstance(decoded, dict):
            raise KubeError(f"{call.verb} {path}: expected a JSON object in the response")
        return decoded

    async def _throttle(self, method: str) -> float:
        if self._limiter is None:
            return 0.0
        waited = await self._limiter.wait()
        self._metrics.rate_limiter_duration.labels(method, self.host).observe(waited)
        return waited

    async def _headers(
        self, accept: str, content_type: str | None, traceparent: str
    ) -> dict[str, str]:
        headers = {"User-Agent": self.config.user_agent, "Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        authorization = await self._auth.header()
        if authorization:
            headers["Authorization"] = authorization
        if traceparent:
            headers["traceparent"] = traceparent
        return headers

    def _traceparent(self) -> tuple[str, str]:
        """(the request's own span id, its W3C traceparent) inside a step, else ("", "").

        The parent in the header is the request's CLIENT span, not the step, so that the
        apiserver's span nests under the call that caused it, as OTel's HTTP instrumentation
        does; the id is chosen here and kept by the trace point (Bus.point)."""
        span = current_span() if self.config.propagate_trace_context else None
        if span is None:
            return "", ""
        span_id = new_span_id()
        flags = "01" if self._trace_sampled(span[0]) else "00"
        return span_id, f"00-{span[0]}-{span_id}-{flags}"

    async def _send(
        self,
        call: _Call,
        method: str,
        path: str,
        params: dict[str, str],
        content: bytes | None,
        accept: str,
        content_type: str | None,
        http_timeout: httpx.Timeout | None,
        stream: bool,
        written: _Written | None = None,
    ) -> httpx.Response:
        """Send with throttling, Retry-After retries, metrics and the trace point. A streamed
        response is returned open (the caller closes it); others are read in full. With
        ``written`` (a write's): a successful response's body is decoded into it and its
        resourceVersion noted as this step's write (:meth:`_note_write`)."""
        clock = self._clock
        start = clock.monotonic_ns()
        waited = 0.0
        retries = 0
        code = 0
        nbytes = 0
        error = ""
        rv = ""
        fenced = False
        written_name = call.name  # a create's is the one the server gave (generateName)
        host = self.host
        metrics = self._metrics
        span_id, traceparent = self._traceparent()
        http = self._watch_http if stream and self._watch_http is not None else self._http
        fence = self.fence if method in _MUTATING_METHODS else None
        extensions = self._extensions
        if fence is not None:
            extensions = {**extensions, "trace": self._fence_trace(call, path, fence)}
        try:
            while True:
                waited += await self._throttle(method)
                headers = await self._headers(accept, content_type, traceparent)
                # Last before the request leaves (after the limiter's and the credentials'
                # waits, each retry again): a write is sent only while the lease is fresh.
                if fence is not None and not fence.is_open():
                    self._fenced(call, path, fence)
                request = http.build_request(
                    method,
                    path,
                    params=params,
                    content=content,
                    headers=headers,
                    timeout=http_timeout or httpx.Timeout(self.config.timeout),
                    extensions=extensions,
                )
                try:
                    resp = await http.send(request, stream=True)
                    try:
                        if not stream or resp.status_code >= 300:
                            await resp.aread()
                    finally:
                        if not stream or resp.status_code >= 300:
                            await resp.aclose()
                    if not stream or resp.status_code >= 300:
                        _unbind(resp)
                except httpx.TimeoutException as e:
                    metrics.requests.labels("<error>", method, host).inc()
                    raise Timeout(
                        f"client-side timeout: {type(e).__name__}", reason="Timeout"
                    ) from None
                except httpx.HTTPError as e:
                    metrics.requests.labels("<error>", method, host).inc()
                    raise TransportError(f"{type(e).__name__}: {e}") from None
                code = resp.status_code
                metrics.requests.labels(str(code), method, host).inc()
                if not stream or code >= 300:
                    nbytes = len(resp.content)
                if code >= 300:
                    if code == 401:
                        self._auth.unauthorized()  # a token source fetches anew next time
                    retry_after = parse_retry_after(resp.headers.get("retry-after"))
                    retryable = code == 429 or code >= 500
                    if retryable and retry_after is not None and retries < self._max_retries:
                        retries += 1
                        metrics.retries.labels(str(code), method, host).inc()
                        await clock.sleep(retry_after)
                        continue
                    raise error_from_response(code, resp.content, resp.headers)
                if written is not None:
                    decoded = decode_json(resp.content) if resp.content else {}
                    written.append(decoded)
                    rv, written_name = self._note_write(call, decoded, "dryRun" in params)
                return resp
        except Exception as e:  # KubeError, or a credential that cannot be read
            error = error_text(e)
            fenced = isinstance(e, FencedError)
            raise
        finally:
            dur_ns = clock.monotonic_ns() - start
            note_call()
            metrics.request_duration.labels(method, host).observe(dur_ns / 1e9)
            (self._bus or default_bus()).point(
                ApiRequestCompleted(
                    span_id=span_id,
                    verb=call.verb,
                    method=method,
                    resource=call.resource,
                    subresource=call.subresource,
                    namespace=call.namespace,
                    name=written_name,
                    host=host,
                    path=path,
                    code=code,
                    bytes=nbytes,
                    rate_limiter_wait_ms=waited * 1000.0,
                    retries=retries,
                    error=error,
                    resource_version=rv,
                    fenced=fenced,
                ),
                dur_ns=dur_ns,
            )

    def _fence_trace(
        self, call: _Call, path: str, fence: WriteFence
    ) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
        """httpcore's ``trace`` callback for one fenced write: the fence checked again right
        before the headers and before the body are written. Raising there aborts the request
        (httpcore closes the connection), and the FencedError reaches the caller as is."""

        async def trace(name: str, info: dict[str, Any]) -> None:
            if name in _SEND_POINTS and not fence.is_open():
                self._fenced(call, path, fence)

        return trace

    def _fenced(self, call: _Call, path: str, fence: WriteFence) -> None:
        """Count and raise a write the fence refused (its trace point says ``fenced``)."""
        self._metrics.fenced_writes.labels(call.verb, call.resource).inc()
        what = "/".join(filter(None, (call.resource, call.subresource))) or path
        raise FencedError(call.verb, what, fence.age(), fence.renew_deadline)

    def _write_started(
        self, call: _Call, body: Any, params: Mapping[str, str] | None
    ) -> tuple[str, str, bool] | None:
        """Note a write in flight in the current step (pycm.trace.causes: its watch event may
        come before its response), by the object's name or a create's generateName, as the
        field manager the server will record (the fieldManager parameter, else the user
        agent's product)."""
        span = get_span()
        if span is None or (params and "dryRun" in params):
            return None
        name, generated = call.name, False
        if not name and isinstance(body, Mapping):
            meta = body.get("metadata")
            if isinstance(meta, Mapping):
                name = str(meta.get("name") or "")
                if not name:
                    name, generated = str(meta.get("generateName") or ""), True
        manager = (params or {}).get("fieldManager") or self._manager
        causes = (self._bus or default_bus()).causes
        return causes.write_started(call.namespace, name, generated, call.verb, manager, span)

    def _note_write(self, call: _Call, decoded: Any, dry_run: bool) -> tuple[str, str]:
        """Note a successful write made in the current step (pycm.trace.causes: the watch
        event it brings names this step as its cause); returns the resourceVersion and the
        object's name as the response gives them."""
        namespace, name, rv = call.namespace, call.name, ""
        if isinstance(decoded, dict) and decoded.get("kind") != "Status":
            meta = decoded.get("metadata")
            if isinstance(meta, dict):
                rv = str(meta.get("resourceVersion") or "")
                name = str(meta.get("name") or name)
                namespace = str(meta.get("namespace") or namespace)
        if dry_run:  # (changes nothing: no event will come of it)
            return rv, name
        span = get_span()
        if span is not None:
            (self._bus or default_bus()).causes.note_write(namespace, name, rv, call.verb, span)
        return rv, name


def _unbind(resp: httpx.Response) -> None:
    """Cut the reference cycle httpx leaves in a response it has read and closed.

    ``httpx.AsyncClient.send`` binds the response's stream to the response (``resp.stream`` is
    a ``BoundAsyncStream`` whose ``_response`` is ``resp``), so a response is freed only by a
    cyclic collection, never by reference counting, and its body with it: every list page (MBs)
    outlived its use until the next collection, and was frozen with the cache when the informer
    froze it (``gc.freeze()``) before one ran. Once read and closed the stream has nothing left
    to give; a plain stream over the body (as a response built from content has) replaces it.
    """
    resp.stream = httpx.ByteStream(resp.content)


def _put(params: dict[str, str], key: str, value: str | None) -> None:
    if value is not None and value != "":
        params[key] = value


def _obj_namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _write_params(dry_run: bool, field_manager: str | None) -> dict[str, str]:
    params: dict[str, str] = {}
    if dry_run:
        params["dryRun"] = "All"
    _put(params, "fieldManager", field_manager)
    return params


def _delete_options(
    uid: str | None,
    resource_version: str | None,
    propagation_policy: str | None,
    grace_period_seconds: int | None,
    dry_run: bool,
) -> Obj:
    options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
    preconditions = {}
    if uid is not None:
        preconditions["uid"] = uid
    if resource_version is not None:
        preconditions["resourceVersion"] = resource_version
    if preconditions:
        options["preconditions"] = preconditions
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if dry_run:
        options["dryRun"] = ["All"]
    return options
