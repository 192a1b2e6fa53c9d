"""The send path every request of a :class:`~pycm.kube.client.Client` takes.

:class:`Sender` is the client's send half (as httpx's ``BaseClient`` holds what building and
sending share, and the verbs only build :class:`~pycm.kube.request.ApiRequest` values): the
connections, the rate limiter, the credentials, the write fence, the metrics and the trace bus.
:meth:`Sender._send` runs, for one request:

1. the client-side rate limiter (``--kube-api-qps`` / ``--kube-api-burst``; a token bucket;
   the seconds waited are measured) — watch requests too, but not the stream once open;
2. headers: User-Agent, Accept (metadata-only requests ask for PartialObjectMetadata and fall
   back to plain JSON), Authorization (token files re-read for rotation), ``traceparent`` when
   inside a trace step — sampled (flag 01) only in the traces the manager exports by ratio
   (:class:`pycm.util.sampling.TraceIdRatio` at ``trace_sample_ratio``), 00 otherwise;
3. the request, with the config's timeout (watch streams use ``timeoutSeconds`` plus a read
   margin instead); watch and list requests go through a second httpx client over the wire
   transport (:mod:`pycm.kube.wire`: the body read in bulk, a list page's 2.8 MB in a few
   blocks where httpcore and h11 took ~45 reads of 64 KiB at 2–3× the CPU), unless the client
   was given a transport of its own (a test's) or no TLS context to reuse; a write of a
   fenced client passes its fence first and again as it is written (:mod:`pycm.kube.fence`);
4. a 429 — or a 5xx — carrying Retry-After is retried after that many seconds, up to
   :data:`MAX_RETRIES` times (client-go's ``checkWait``), each retry through the limiter again;
5. the whole body is decoded with one ``orjson.loads`` (no per-item work);
6. one ``api.request`` trace point (:class:`~pycm.trace.kinds.ApiRequestCompleted`) and
   client-go's ``rest_client_*`` metrics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Protocol, Self

import httpx
from prometheus_client import CollectorRegistry

from pycm.kube.auth import Authenticator
from pycm.kube.config import ClientConfig
from pycm.kube.errors import (
    FencedError,
    KubeError,
    Timeout,
    TransportError,
    error_from_response,
    parse_retry_after,
)
from pycm.kube.fence import MUTATING_METHODS, WriteFence, send_point_check
from pycm.kube.metrics import ClientMetrics, client_metrics
from pycm.kube.request import ApiRequest
from pycm.kube.response import decode_json, unbind
from pycm.kube.transport import build_http_client, build_watch_client
from pycm.trace.bus import Bus, default_bus
from pycm.trace.context import current_span, error_text, get_span, new_span_id, note_call
from pycm.trace.kinds import ApiRequestCompleted
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.ratelimit import TokenBucket
from pycm.util.sampling import TraceIdRatio

__all__ = ["MAX_RETRIES", "RateLimiter", "Sender"]

Obj = dict[str, Any]

# client-go retries a request answered with Retry-After at most 10 times.
MAX_RETRIES = 10
# With --kube-api-qps 0, client-go uses 5 qps, burst 10.
_DEFAULT_QPS, _DEFAULT_BURST = 5.0, 10

_WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})


class RateLimiter(Protocol):
    """The subset of a token bucket the client uses."""

    async def wait(self) -> float:
        """Wait for a token; return the seconds waited."""
        ...


def _limiter_for(config: ClientConfig, clock: Clock) -> TokenBucket | None:
    if config.qps < 0:
        return None
    qps, burst = (config.qps, config.burst) if config.qps > 0 else (_DEFAULT_QPS, _DEFAULT_BURST)
    return TokenBucket(qps if qps != math.inf else math.inf, max(1, burst), clock=clock)


class Sender:
    """The send half of a client for one configuration (see the module's doc)."""

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
        # Watch streams and lists go through the wire transport (bulk reads; pycm.kube.wire) when
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

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()
            if self._watch_http is not None:
                await self._watch_http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def bus(self) -> Bus:
        """The trace bus this client's requests are traced on (helpers that write through
        it trace what they did on the same one)."""
        return self._bus or default_bus()

    async def _json(self, request: ApiRequest, body: Any = None) -> Obj:
        """Send ``request`` and return the JSON object it answers with. ``body`` is what the
        request's content encodes: a write's names the object it writes (pycm.trace.causes)."""
        # A write's response is decoded in _send, which notes its resourceVersion (the cause
        # of the watch event it will bring: pycm.trace.causes) before its trace point.
        written: list[Any] | None = None
        in_flight = None
        if request.verb in _WRITE_VERBS:
            written = []
            in_flight = self._write_started(request, body)
        try:
            resp = await self._send(request, written)
        finally:
            if in_flight is not None:
                (self._bus or default_bus()).causes.write_ended(in_flight)
        if not written:
            written = [decode_json(resp.content) if resp.content else {}]
        decoded = written[0]
        if not isinstance(decoded, dict):
            raise KubeError(
                f"{request.verb} {request.path}: expected a JSON object in the response"
            )
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

    async def _send(self, request: ApiRequest, written: list[Any] | None = None) -> httpx.Response:
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
        written_name = request.name  # a create's is the one the server gave (generateName)
        method = request.method
        stream = request.stream
        host = self.host
        metrics = self._metrics
        span_id, traceparent = self._traceparent()
        # Watch streams and list pages (MBs each) read their bodies in bulk (pycm.kube.wire).
        bulk = stream or request.verb == "list"
        http = self._watch_http if bulk and self._watch_http is not None else self._http
        fence = self.fence if method in MUTATING_METHODS else None
        extensions = self._extensions
        if fence is not None:
            checked = fence  # (bound for the closure)
            extensions = {
                **extensions,
                "trace": send_point_check(checked, lambda: self._fenced(request, checked)),
            }
        try:
            while True:
                waited += await self._throttle(method)
                headers = await self._headers(request.accept, request.content_type, traceparent)
                # Last before the request leaves (after the limiter's and the credentials'
                # waits, each retry again): a write is sent only while the lease is fresh.
                if fence is not None and not fence.is_open():
                    self._fenced(request, fence)
                sent = http.build_request(
                    method,
                    request.path,
                    params=request.params,
                    content=request.content,
                    headers=headers,
                    timeout=request.timeout or httpx.Timeout(self.config.timeout),
                    extensions=extensions,
                )
                try:
                    resp = await http.send(sent, stream=True)
                    try:
                        if not stream or resp.status_code >= 300:
                            await resp.aread()
                    finally:
                        if not stream or resp.status_code >= 300:
                            await resp.aclose()
                    if not stream or resp.status_code >= 300:
                        unbind(resp)
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
                    rv, written_name = self._note_write(request, decoded)
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
                    verb=request.verb,
                    method=method,
                    resource=request.resource,
                    subresource=request.subresource,
                    namespace=request.namespace,
                    name=written_name,
                    host=host,
                    path=request.path,
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

    def _fenced(self, request: ApiRequest, fence: WriteFence) -> None:
        """Count and raise a write the fence refused (its trace point says ``fenced``)."""
        self._metrics.fenced_writes.labels(request.verb, request.resource).inc()
        what = "/".join(filter(None, (request.resource, request.subresource))) or request.path
        raise FencedError(request.verb, what, fence.age(), fence.renew_deadline)

    def _write_started(self, request: ApiRequest, body: Any) -> tuple[str, str, bool] | None:
        """Note a write in flight in the current step (pycm.trace.causes: its watch event may
        come before its response), by the object's name or a create's generateName, as the
        field manager the server will record (the fieldManager parameter, else the user
        agent's product)."""
        span = get_span()
        if span is None or request.dry_run:
            return None
        name, generated = request.name, False
        if not name and isinstance(body, Mapping):
            meta = body.get("metadata")
            if isinstance(meta, Mapping):
                name = str(meta.get("name") or "")
                if not name:
                    name, generated = str(meta.get("generateName") or ""), True
        manager = request.params.get("fieldManager") or self._manager
        causes = (self._bus or default_bus()).causes
        return causes.write_started(request.namespace, name, generated, request.verb, manager, span)

    def _note_write(self, request: ApiRequest, decoded: Any) -> tuple[str, str]:
        """Note a successful write made in the current step (pycm.trace.causes: the watch
        event it brings names this step as its cause); returns the resourceVersion and the
        object's name as the response gives them."""
        namespace, name, rv = request.namespace, request.name, ""
        if isinstance(decoded, dict) and decoded.get("kind") != "Status":
            meta = decoded.get("metadata")
            if isinstance(meta, dict):
                rv = str(meta.get("resourceVersion") or "")
                name = str(meta.get("name") or name)
                namespace = str(meta.get("namespace") or namespace)
        if request.dry_run:  # (changes nothing: no event will come of it)
            return rv, name
        span = get_span()
        if span is not None:
            (self._bus or default_bus()).causes.note_write(namespace, name, rv, request.verb, span)
        return rv, name
