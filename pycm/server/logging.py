"""Request logging (apiserver ``httplog``): one structured record per request — method, path
(with its query), status, duration, user and user agent — on the ``pycm.server.http`` logger.

Responses below 500 are logged at DEBUG (a scraper every few seconds is not news); 5xx at INFO.
The fields are also on the record (``extra``): ``http_method``, ``http_path``, ``http_query``,
``http_status``, ``duration_ms``, ``user``, ``user_agent``. The user is read after the inner
layers ran, so it is the one authentication found. An exception from inside is logged as status
500 and re-raised for the panic layer.

Every field a client controls is escaped (:func:`pycm.util.escape.escape_control`) before it is
logged, in the message and in ``extra`` alike: ``GET /metrics%0aE1203 …`` is one line with a
visible ``\\n``, never a forged second record.
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pycm.server.authentication import get_user
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.escape import escape_control

__all__ = ["RequestLoggingMiddleware", "request_fields"]

_log = logging.getLogger("pycm.server.http")


def request_fields(scope: Scope) -> tuple[str, str, str]:
    """Method, path and query of a request, escaped for a log line or an event attribute."""
    query = scope.get("query_string", b"")
    return (
        escape_control(str(scope.get("method", ""))),
        escape_control(str(scope.get("path", ""))),
        escape_control(query.decode("latin-1") if isinstance(query, bytes) else str(query)),
    )


def _user_agent(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"user-agent":
            return escape_control(value.decode("latin-1"))
    return ""


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
        method, path, query = request_fields(scope)
        user, agent = escape_control(get_user(scope).name), _user_agent(scope)
        self.logger.log(
            level,
            '%s %s%s %d %.3fms user=%s agent="%s"',
            method,
            path,
            "?" + query if query else "",
            status,
            duration_ms,
            user,
            agent,
            extra={
                "http_method": method,
                "http_path": path,
                "http_query": query,
                "http_status": status,
                "duration_ms": duration_ms,
                "user": user,
                "user_agent": agent,
            },
        )
