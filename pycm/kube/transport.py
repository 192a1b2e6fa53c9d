"""The HTTP layer: one ``httpx.AsyncClient`` per configuration, TLS from the config.

HTTP/1.1 only (the API server's watch streams are chunked responses; HTTP/2 multiplexing would
put every watch behind one connection's flow control). The pool is sized for many concurrent
watches — each open watch holds a connection for its whole life — plus request traffic.
"""

from __future__ import annotations

import ssl

import httpx

from pycm.kube.config import ClientConfig
from pycm.kube.wire import WireTransport

__all__ = [
    "MAX_CONNECTIONS",
    "MAX_KEEPALIVE",
    "build_http_client",
    "build_ssl_context",
    "build_watch_client",
]

MAX_CONNECTIONS = 1024
MAX_KEEPALIVE = 128


def build_ssl_context(config: ClientConfig) -> ssl.SSLContext:
    """The TLS context for ``config`` (blocking: it reads certificate files)."""
    if config.insecure_skip_tls_verify:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif config.ca_data or config.ca_file:
        ctx = ssl.create_default_context(
            cafile=config.ca_file,
            cadata=config.ca_data.decode("ascii") if config.ca_data else None,
        )
    else:
        ctx = ssl.create_default_context()
    if config.cert_file:
        ctx.load_cert_chain(config.cert_file, config.key_file)
    return ctx


def build_http_client(
    config: ClientConfig,
    *,
    ssl_context: ssl.SSLContext | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """An AsyncClient for ``config``. Timeouts are set per request by the client."""
    return httpx.AsyncClient(
        base_url=config.server,
        http1=True,
        http2=False,
        verify=ssl_context if ssl_context is not None else True,
        transport=transport,
        limits=httpx.Limits(
            max_connections=MAX_CONNECTIONS,
            max_keepalive_connections=MAX_KEEPALIVE,
            keepalive_expiry=90.0,
        ),
        timeout=httpx.Timeout(config.timeout),
        trust_env=False,
        follow_redirects=False,
    )


def build_watch_client(config: ClientConfig, ssl_context: object) -> httpx.AsyncClient | None:
    """An AsyncClient for watch streams and list pages over the wire transport
    (:mod:`pycm.kube.wire`), or None where the regular client must serve them: a server URL that
    is neither http nor
    https, or https without a built TLS context (``Client.connect`` always builds one; a
    client made without one trusts httpx's default CA bundle, which the wire path does not
    reproduce)."""
    scheme = httpx.URL(config.server).scheme
    if scheme == "http":
        tls = None
    elif scheme == "https" and isinstance(ssl_context, ssl.SSLContext):
        tls = ssl_context
    else:
        return None
    return build_http_client(config, transport=WireTransport(tls))
