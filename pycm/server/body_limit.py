"""Request body size per route: 413 Request Entity Too Large past a route's bound.

kube-apiserver bounds what it reads of a body (``MaxRequestBodyBytes``, 3 MiB, for resource
writes); a controller manager reads almost nothing: its routes are GETs, and the mounted
dashboard's two POSTs take a login form and a replay control of a few hundred bytes. A route's
bound is looked up by exact path in ``limits``, else ``default``.

- a ``Content-Length`` over the bound is answered 413 before authentication and before a byte
  of the body is read; the connection gate (:mod:`pycm.util.serving_limits`) then gives the
  client two seconds to read it and aborts the connection if the body was large;
- a body without a length (chunked) is counted as the handler reads it: past the bound the
  handler sees the client gone (``http.disconnect``) and, if it has not answered yet, the
  client gets the 413.

The answer is a ``v1.Status`` (reason ``RequestEntityTooLarge``), as kube writes it.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pycm.server.responses import send_text

__all__ = ["DEFAULT_MAX_REQUEST_BODY", "RequestBodyLimitMiddleware"]

DEFAULT_MAX_REQUEST_BODY = 64 * 1024


def _status_json(limit: int) -> str:
    message = f"the request body is larger than this route's limit of {limit} bytes"
    return (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        f'"message":"{message}","reason":"RequestEntityTooLarge","details":{{}},"code":413}}'
    )


async def _send_413(send: Send, limit: int) -> None:
    await send_text(send, 413, _status_json(limit), content_type="application/json")


class RequestBodyLimitMiddleware:
    NAME = "request_body_limit"

    def __init__(
        self,
        app: ASGIApp,
        *,
        limits: Mapping[str, int] | None = None,
        default: int = DEFAULT_MAX_REQUEST_BODY,
    ) -> None:
        self.app = app
        self.limits = dict(limits or {})
        self.default = default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits.get(str(scope.get("path", "")), self.default)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _send_413(send, limit)
            return
        if declared is not None:  # the HTTP layer delivers no more than it declared
            await self.app(scope, receive, send)
            return
        received = 0
        exceeded = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, exceeded
            if exceeded:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    return {"type": "http.disconnect"}
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if exceeded and not started:
                return  # the 413 below answers instead
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except Exception:
            # Past the bound the handler was told the client left; what it raised for that
            # (Starlette's ClientDisconnect) is ours to answer. Anything else is the panic
            # layer's.
            if not exceeded:
                raise
        if exceeded and not started:
            await _send_413(send, limit)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
