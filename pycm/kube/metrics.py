"""client-go's REST client metrics, on an injectable Prometheus registry.

Names and labels are client-go's, so existing dashboards work. As in client-go, the ``verb``
label of the duration histograms holds the HTTP method (``GET``, ``POST``, …) and ``code`` is
the HTTP status, or ``<error>`` when no response arrived.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

__all__ = ["LATENCY_BUCKETS", "ClientMetrics", "client_metrics"]

# client-go's buckets for request and rate-limiter latency (seconds).
LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class ClientMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=registry,
        )
        self.request_duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.rate_limiter_duration = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.retries = Counter(
            "rest_client_request_retries",
            "Number of request retries, partitioned by status code, verb, and host.",
            ["code", "verb", "host"],
            registry=registry,
        )
        # pycm's own: writes a leader-elected client refused to send because its lease renew
        # was older than the renew deadline (pycm.kube.fence.WriteFence). Any increase means
        # a replica tried to write while it might no longer lead.
        self.fenced_writes = Counter(
            "pycm_fenced_writes",
            "Writes refused before they were sent because this replica's last lease renew was "
            "older than the renew deadline, by Kubernetes verb and resource.",
            ["verb", "resource"],
            registry=registry,
        )


_by_registry: WeakKeyDictionary[CollectorRegistry, ClientMetrics] = WeakKeyDictionary()


def client_metrics(registry: CollectorRegistry | None = None) -> ClientMetrics:
    """The metrics on ``registry`` (the global one by default), registered once per registry."""
    reg = REGISTRY if registry is None else registry
    metrics = _by_registry.get(reg)
    if metrics is None:
        metrics = _by_registry[reg] = ClientMetrics(reg)
    return metrics
