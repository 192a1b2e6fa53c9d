"""The few responses the handler chain writes itself, sent straight through ASGI ``send``.

Errors from authentication and authorization are Kubernetes ``Status`` objects (JSON), as the
apiserver's ``responsewriters`` write them; an internal error is plain text and never carries
the exception's text.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson
from starlette.types import Send

__all__ = ["send_status", "send_text"]


async def send_text(
    send: Send,
    status: int,
    body: str,
    *,
    content_type: str = "text/plain; charset=utf-8",
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    data = body.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(data)).encode()),
                (b"x-content-type-options", b"nosniff"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def send_status(send: Send, code: int, reason: str, message: str) -> None:
    """A ``v1.Status`` failure, as kube's ``ErrorNegotiated`` renders it in JSON."""
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code,
    }
    await send_text(send, code, orjson.dumps(status).decode(), content_type="application/json")
