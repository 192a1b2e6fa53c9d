"""The write fence: what a leader-elected client checks before each write leaves.

A mutating request (POST, PUT, PATCH, DELETE) of a client with a :class:`WriteFence` (a
leader-elected controller's: the elector's renew gate) passes the fence before it is built and
again at the moment it is written to the connection (httpcore's ``trace`` hook: before the
request headers, and before the body), each retry too, or raises
:class:`~pycm.kube.errors.FencedError`: refused before the headers, nothing was sent; before the
body, the connection is closed on a request the server never completes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

__all__ = ["MUTATING_METHODS", "WriteFence", "send_point_check"]


class WriteFence(Protocol):
    """What a leader-elected client checks before each write leaves (the leader elector's
    renew gate, :class:`pycm.leaderelection.gate.RenewGate`): open while the last lease renew
    is younger than the renew deadline by the local monotonic clock."""

    renew_deadline: float

    def is_open(self) -> bool: ...

    def age(self) -> float | None:
        """Seconds since the last renew began; None when not leading."""
        ...


# The HTTP methods that change state: a fenced client checks its fence before each of them.
MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# httpcore's trace points at which a fenced write is checked once more: the last moments before
# the request's bytes are written (a pause, or a new connection's handshake, may fall between
# the first check and these).
_SEND_POINTS = frozenset(
    {"http11.send_request_headers.started", "http11.send_request_body.started"}
)


def send_point_check(
    fence: WriteFence, refuse: Callable[[], None]
) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
    """httpcore's ``trace`` callback for one fenced write: the fence checked again right before
    the headers and before the body are written; ``refuse`` raises when it is closed. Raising
    there aborts the request (httpcore closes the connection), and the error reaches the caller
    as is."""

    async def trace(name: str, info: dict[str, Any]) -> None:
        if name in _SEND_POINTS and not fence.is_open():
            refuse()

    return trace
