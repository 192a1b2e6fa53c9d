"""A minimal OTLP/gRPC trace receiver for the benchmarks, run in its own process: it counts the
spans it receives and prints its port on the first line of stdout."""

from __future__ import annotations

import sys
from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


class _Counter(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.spans = 0

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                self.spans += len(ss.spans)
        return trace_service_pb2.ExportTraceServiceResponse()


def main() -> int:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Counter(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    sys.stdin.read()  # run until the parent closes our stdin
    server.stop(grace=0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
