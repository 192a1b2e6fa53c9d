"""A small Server-Sent Events parser (the WHATWG ``text/event-stream`` rules pycm needs).

Feed it decoded lines without their terminators (``httpx.Response.aiter_lines`` splits on
``\\n``, ``\\r\\n`` and ``\\r``); :meth:`SseParser.feed` returns a :class:`SseMessage` when a blank
line ends one. Rules kept from the spec: a line starting with ``:`` is a comment; ``field:
value`` drops one leading space of the value; a line without ``:`` is a field with an empty
value; several ``data`` lines join with ``\\n``; an ``id`` containing NUL is ignored; the last
``id`` persists across messages; a message without data is not dispatched; unknown fields are
ignored. ``retry`` is kept as the server's suggested reconnection delay (ms), if an integer.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SseMessage", "SseParser"]


@dataclass(frozen=True, slots=True)
class SseMessage:
    event: str  # "message" when the stream did not name one
    data: str
    id: str  # the last event id seen on the stream ("" before any)


class SseParser:
    """Incremental parser. Invariant: ``_data`` holds the data lines of the message being read."""

    __slots__ = ("_data", "_event", "last_id", "retry_ms")

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self.last_id = ""
        self.retry_ms: int | None = None

    def feed(self, line: str) -> SseMessage | None:
        """Consume one line; the message it completes, if any."""
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> SseMessage | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return SseMessage(event=event or "message", data="\n".join(data), id=self.last_id)
