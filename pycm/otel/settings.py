"""Where spans go: the OTLP endpoint and protocol from the flags and the standard OTEL_* env.

Precedence (flags win): ``--otlp-endpoint`` if given, else ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
(used as is), else ``OTEL_EXPORTER_OTLP_ENDPOINT``; no endpoint at all means no export.
``--otlp-protocol`` wins when it is not its default ("grpc"); otherwise
``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` pick it. The other
exporter variables (headers, timeout, compression, certificates) are read by the SDK's exporters
themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from pycm.util.redact import redact_url

__all__ = ["EXPORT_TIMEOUT", "PROTOCOLS", "ExportSettings", "endpoint_problem", "resolve_settings"]

PROTOCOLS = ("grpc", "http/protobuf")
SCHEMES = ("http", "https")
_DEFAULT_PROTOCOL = "grpc"
# One export call gives up after this long (the SDK's default is 10 s); with the collector down
# the batch processor's worker thread is the only thing that waits.
EXPORT_TIMEOUT = 5.0


@dataclass(frozen=True)
class ExportSettings:
    endpoint: str  # for http/protobuf: the full URL of the traces path
    protocol: str
    source: str  # "flag" or the env variable the endpoint came from


def endpoint_problem(value: str) -> str | None:
    """Why ``value`` is not an OTLP endpoint (``http(s)://host[:port][/path]``, or ``host:port``,
    taken as http as the exporter takes it), or None when it is one."""
    url = value if "://" in value else f"http://{value}"
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a non-numeric or out-of-range port
    except ValueError as err:
        return f"not a URL: {err}"
    if any(c.isspace() for c in value) or not parts.hostname:
        return "not a URL: want http(s)://host:port"
    if parts.port is None and parts.netloc.endswith(":"):
        # (urlsplit takes "host:" as the host with no port: the exporter would then dial the
        # scheme's default, 443 for gRPC, and fail at every export instead of at start-up.)
        return "not a URL: empty port"
    if parts.scheme not in SCHEMES:
        # (A scheme urlsplit recognizes is letters, digits, "+", "-" and ".": nothing to escape.)
        return f'scheme "{parts.scheme}" is not supported: want http or https'
    return None


def resolve_settings(
    flag_endpoint: str, flag_protocol: str, env: Mapping[str, str]
) -> ExportSettings | None:
    """The export target, or None when nothing asks for export."""
    protocol = flag_protocol or _DEFAULT_PROTOCOL
    if protocol == _DEFAULT_PROTOCOL:
        protocol = (
            env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or _DEFAULT_PROTOCOL
        ).strip()
    if protocol not in PROTOCOLS:
        raise ValueError(f"unsupported OTLP protocol {protocol!r} (want one of {PROTOCOLS})")
    if flag_endpoint:
        endpoint, source, full = flag_endpoint, "flag", False
    elif env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        endpoint, source, full = (
            env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            True,
        )
    elif env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        endpoint, source, full = (
            env["OTEL_EXPORTER_OTLP_ENDPOINT"],
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            False,
        )
    else:
        return None
    endpoint = endpoint.strip()
    problem = endpoint_problem(endpoint)
    if problem:  # (the flag's value was checked with the other flags; the env's is here)
        raise ValueError(f"{source} {redact_url(endpoint)!r}: {problem}")
    if "://" not in endpoint:
        endpoint = f"http://{endpoint}"
    if protocol == "http/protobuf" and not full:
        # A base URL gets the signal path (the spec's rule for OTEL_EXPORTER_OTLP_ENDPOINT); a
        # flag value that already names a path is taken as is.
        path = urlsplit(endpoint).path
        if path in ("", "/"):
            endpoint = endpoint.rstrip("/") + "/v1/traces"
    return ExportSettings(endpoint=endpoint, protocol=protocol, source=source)
