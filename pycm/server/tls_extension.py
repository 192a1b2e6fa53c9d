"""The ASGI TLS extension for uvicorn: how the authentication layer sees client certificates.

uvicorn (0.55 here) puts nothing about TLS in the ASGI scope; the ASGI spec's answer is the TLS
extension, ``scope["extensions"]["tls"]`` (proposed for uvicorn in Kludex/uvicorn#1119, #3043,
#3132, not released). Reading the transport from the scope is not possible either, so pycm
serves with :class:`TLSExtensionH11Protocol`, a small subclass of uvicorn's h11 protocol: when
a connection is made — for TLS, after the handshake, so the peer certificate is final and
verified — it reads ``transport.get_extra_info("ssl_object")`` once and wraps that
connection's app so every request on it carries the extension:

``client_cert_chain``  [the client's leaf certificate as PEM] (Python < 3.13 cannot give the
                       rest of the verified chain), or [] when none was presented;
``client_cert_name``   the leaf's subject as an RFC 4514 string, or None;
``tls_version``        0x0303 (TLS 1.2) / 0x0304 (TLS 1.3);
``server_cert``, ``client_cert_error``, ``cipher_suite``  None (not available from ``ssl``;
                       a certificate that fails verification never gets this far).

Plain-HTTP connections get no extension, as the spec requires. If a later uvicorn fills the
extension itself, its value is kept. Why per connection and not per request: the handshake is
per connection, and this costs one dict merge per request.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from cryptography import x509
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["TLSExtensionH11Protocol", "tls_extension"]

_TLS_VERSIONS = {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}


def tls_extension(ssl_object: ssl.SSLObject | ssl.SSLSocket) -> dict[str, Any]:
    """The ASGI TLS extension dict for an established TLS connection."""
    der = ssl_object.getpeercert(binary_form=True)
    chain: list[str] = []
    name: str | None = None
    if der:
        chain.append(ssl.DER_cert_to_PEM_cert(der))
        name = x509.load_der_x509_certificate(der).subject.rfc4514_string()
    version = ssl_object.version()
    return {
        "server_cert": None,
        "client_cert_chain": chain,
        "client_cert_name": name,
        "client_cert_error": None,
        "tls_version": _TLS_VERSIONS.get(version or ""),
        "cipher_suite": None,
    }


class _WithTLSExtension:
    __slots__ = ("app", "tls")

    def __init__(self, app: ASGIApp, tls: dict[str, Any]) -> None:
        self.app = app
        self.tls = tls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            extensions = dict(scope.get("extensions") or {})
            extensions.setdefault("tls", self.tls)
            scope = {**scope, "extensions": extensions}
        await self.app(scope, receive, send)


class TLSExtensionH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, adding the ASGI TLS extension on TLS connections."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            self.app = _WithTLSExtension(self.app, tls_extension(ssl_object))
