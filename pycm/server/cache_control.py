"""Cache control (apiserver ``WithCacheControl``): a response that did not say how it may be
cached gets ``Cache-Control: no-cache, private`` — health and metrics answers must not be
served stale by a proxy."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CacheControlMiddleware"]

_VALUE = b"no-cache, private"


class CacheControlMiddleware:
    NAME = "cache_control"

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_default(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                if not any(name.lower() == b"cache-control" for name, _ in headers):
                    headers.append((b"cache-control", _VALUE))
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_default)
