"""Real OTLP peers on 127.0.0.1 for the tests: an OTLP/HTTP receiver (Starlette on uvicorn, in
process) and an OTLP/gRPC receiver (grpc.aio with the proto's TraceService servicer). Both
decode ExportTraceServiceRequest and keep what they received; either can be told to stall."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass, field
from typing import Any

import grpc
import uvicorn
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs if isinstance(kv, KeyValue)}


@dataclass
class Received:
    """One received span with its resource attributes."""

    resource: dict[str, Any]
    span: Span

    @property
    def trace_id(self) -> str:
        return self.span.trace_id.hex()

    @property
    def span_id(self) -> str:
        return self.span.span_id.hex()

    @property
    def parent_id(self) -> str:
        return self.span.parent_span_id.hex()

    @property
    def attributes(self) -> dict[str, Any]:
        return attrs(self.span.attributes)


@dataclass
class Receiver:
    requests: list[trace_service_pb2.ExportTraceServiceRequest] = field(default_factory=list)
    stall: asyncio.Event | None = None  # while set... see ``stalled``
    endpoint: str = ""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, request: trace_service_pb2.ExportTraceServiceRequest) -> None:
        self.requests.append(request)
        self.arrived.set()

    def spans(self) -> list[Received]:
        out = []
        for request in self.requests:
            for rs in request.resource_spans:
                resource = attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    out.extend(Received(resource, span) for span in ss.spans)
        return out

    async def wait_for(self, predicate: Any, timeout: float = 15.0) -> list[Received]:
        async with asyncio.timeout(timeout):
            while True:
                spans = self.spans()
                if predicate(spans):
                    return spans
                self.arrived.clear()
                await self.arrived.wait()


def _socket() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


@contextlib.asynccontextmanager
async def otlp_http_receiver(*, stall: bool = False) -> AsyncIterator[Receiver]:
    receiver = Receiver()
    release = asyncio.Event()

    async def export(request: Request) -> Response:
        body = await request.body()
        if stall:
            await release.wait()
        message = trace_service_pb2.ExportTraceServiceRequest()
        message.ParseFromString(body)
        receiver.add(message)
        out = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        return Response(out, media_type="application/x-protobuf")

    app = Starlette(routes=[Route("/v1/traces", export, methods=["POST"])])
    sock = _socket()
    port = sock.getsockname()[1]
    server = _Server(
        uvicorn.Config(
            app, log_config=None, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
    )
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]), name="otlp-http")
    while not server.started:
        assert not task.done(), "the OTLP/HTTP receiver did not start"
        await asyncio.sleep(0.01)
    receiver.endpoint = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        release.set()
        server.should_exit = True
        server.force_exit = True
        await asyncio.wait_for(task, 5)
        sock.close()


class _Servicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: Receiver, release: asyncio.Event | None) -> None:
        self.receiver = receiver
        self.release = release

    async def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        if self.release is not None:
            await self.release.wait()
        self.receiver.add(request)
        return trace_service_pb2.ExportTraceServiceResponse()


@contextlib.asynccontextmanager
async def otlp_grpc_receiver(*, stall: bool = False) -> AsyncIterator[Receiver]:
    receiver = Receiver()
    release = asyncio.Event() if stall else None
    server = grpc.aio.server()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Servicer(receiver, release), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    receiver.endpoint = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        if release is not None:
            release.set()
        await server.stop(grace=0.5)
