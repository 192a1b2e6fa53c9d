"""Request logging (apiserver ``httplog``): one structured record per request — method, path,
status, duration and user — on the ``pycm.server.http`` logger.

Responses below 500 are logged at DEBUG (a scraper every few seconds is not news); 5xx at INFO.
The fields are also on the record (``extra``): ``http_method``, ``http_path``, ``http_status``,
``duration_ms``, ``user``. The user is read after the inner layers ran, so it is the one
authentication found. An exception from inside is logged as status 500 and re-raised for the
panic layer.
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pycm.server.authentication import get_user
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["RequestLoggingMiddleware"]

_log = logging.getLogger("pycm.server.http")


class RequestLoggingMiddleware:
    NAME = "request_logging"

    def __init__(
        self, app: ASGIApp, *, logger: logging.Logger = _log, clock: Clock = REAL_CLOCK
    ) -> None:
        self.app = app
        self.logger = logger
        self.clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = self.clock.monotonic_ns()
        status = 0

        async def send_recording(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_recording)
        except Exception:
            status = status or 500
            raise
        finally:
            self._log(scope, status, (self.clock.monotonic_ns() - start) / 1e6)

    def _log(self, scope: Scope, status: int, duration_ms: float) -> None:
        level = logging.INFO if status >= 500 else logging.DEBUG
        if not self.logger.isEnabledFor(level):
            return
        method, path, user = scope.get("method", ""), scope.get("path", ""), get_user(scope).name
        self.logger.log(
            level,
            "%s %s %d %.3fms user=%s",
            method,
            path,
            status,
            duration_ms,
            user,
            extra={
                "http_method": method,
                "http_path": path,
                "http_status": status,
                "duration_ms": duration_ms,
                "user": user,
            },
        )
