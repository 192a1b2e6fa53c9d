"""Panic recovery, the outermost layer (apiserver ``WithPanicRecovery``).

Any exception a request raises becomes a 500 with the body ``Internal Server Error`` — never the
exception's text — and is logged with the method and path; the server keeps serving. When the
response had already started, nothing more can be sent: the error is logged and the connection
is left for the server to close. ``CancelledError`` is not an exception here and passes through.
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pycm.server.logging import request_fields
from pycm.server.responses import send_text

__all__ = ["PanicRecoveryMiddleware"]

_log = logging.getLogger("pycm.server.panic")


class PanicRecoveryMiddleware:
    NAME = "panic_recovery"

    def __init__(self, app: ASGIApp, *, logger: logging.Logger = _log) -> None:
        self.app = app
        self.logger = logger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, send_tracking)
        except Exception:
            method, path, _ = request_fields(scope)  # the client's text, escaped
            self.logger.exception(
                "panic serving %s %s",
                method,
                path,
                extra={"http_method": method, "http_path": path},
            )
            if not started:
                await send_text(send, 500, "Internal Server Error")
