"""What comes back: a raw :class:`Response`, a whole :class:`ListResult`, and how a body is
decoded (:func:`decode_json`) and a read response freed (:func:`unbind`)."""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

__all__ = ["GC_PAUSE_BYTES", "ListResult", "Response", "decode_json", "unbind"]

Obj = dict[str, Any]

# Bodies at least this large are decoded with the cyclic GC paused (see decode_json).
GC_PAUSE_BYTES = 256 * 1024


def decode_json(content: bytes) -> Any:
    """One ``orjson.loads`` of the whole body.

    For large bodies the cyclic GC is paused for the duration: a decoded document holds no
    cycles, so the collections its allocation bursts trigger traverse young (and surviving)
    objects for nothing. The pause is synchronous (no await inside), so no other task runs
    while it lasts.
    """
    if len(content) < GC_PAUSE_BYTES or not gc.isenabled():
        return orjson.loads(content)
    gc.disable()
    try:
        return orjson.loads(content)
    finally:
        gc.enable()


@dataclass(frozen=True, slots=True)
class ListResult:
    """All items of a (possibly paged) list, and the list's resourceVersion to watch from."""

    items: list[Obj]
    resource_version: str
    pages: int = 1


@dataclass(frozen=True, slots=True)
class Response:
    """A raw response (from :meth:`Client.request <pycm.kube.client.Client.request>`)."""

    code: int
    headers: httpx.Headers
    content: bytes

    def json(self) -> Any:
        return decode_json(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


def unbind(resp: httpx.Response) -> None:
    """Cut the reference cycle httpx leaves in a response it has read and closed.

    ``httpx.AsyncClient.send`` binds the response's stream to the response (``resp.stream`` is
    a ``BoundAsyncStream`` whose ``_response`` is ``resp``), so a response is freed only by a
    cyclic collection, never by reference counting, and its body with it: every list page (MBs)
    outlived its use until the next collection, and was frozen with the cache when the informer
    froze it (``gc.freeze()``) before one ran. Once read and closed the stream has nothing left
    to give; a plain stream over the body (as a response built from content has) replaces it.
    """
    resp.stream = httpx.ByteStream(resp.content)
