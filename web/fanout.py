"""The broadcast behind ``/dashboard/api/stream``: frames encoded once, a bounded queue per viewer.

The hub encodes each message once, as the bytes of one Server-Sent Events frame
(:func:`sse_frame`), and :meth:`Broadcast.publish` appends the same ``bytes`` object to every
viewer's queue — O(viewers) per message, nothing per event per viewer. A viewer whose queue is
full when a frame arrives has fallen behind: it is cut off at once (its queue is dropped and it
leaves the broadcast), and its stream then sends one final ``lagged`` frame and ends, so the
page reconnects and starts again from a fresh ``hello``. A slow viewer therefore never holds
memory beyond its bound and never slows the publisher or the other viewers.
"""

from __future__ import annotations

from collections import deque

import orjson

from pycm.util.wakeup import Wakeup

__all__ = [
    "DEFAULT_QUEUE_BYTES",
    "DEFAULT_QUEUE_FRAMES",
    "Broadcast",
    "Viewer",
    "sse_comment",
    "sse_frame",
]

# How far behind a viewer may fall before it is cut off. The hub sends at most ~4 event frames
# and one snapshot frame per source a second, so 256 frames is ~20 s of a three-replica view;
# the byte bound caps what a busy stream (5k events/s is ~1.5 MB/s of JSON) can pile up.
DEFAULT_QUEUE_FRAMES = 256
DEFAULT_QUEUE_BYTES = 16 * 1024 * 1024


def sse_frame(event: str, data: bytes, id: str | None = None) -> bytes:
    """One SSE message: ``event``, optional ``id``, and ``data`` (compact JSON: one line)."""
    head = b"event: " + event.encode() + b"\n"
    if id is not None:
        head += b"id: " + id.encode() + b"\n"
    return head + b"data: " + data + b"\n\n"


def sse_comment(text: str) -> bytes:
    return b": " + text.encode() + b"\n\n"


def lagged_frame(dropped: int) -> bytes:
    return sse_frame("lagged", orjson.dumps({"dropped": dropped}))


class Viewer:
    """One connected stream. Invariants: ``queued_bytes`` is the sum of the lengths of
    ``_frames``; once ``cut`` is set the queue is empty and stays so, and ``dropped`` counts the
    frames it never got (those queued when it was cut, and the one that did not fit)."""

    __slots__ = (
        "_frames",
        "_wakeup",
        "closed",
        "cut",
        "dropped",
        "max_bytes",
        "max_frames",
        "name",
        "queued_bytes",
    )

    def __init__(self, name: str, max_frames: int, max_bytes: int) -> None:
        if max_frames < 1 or max_bytes < 1:
            raise ValueError("a viewer's queue holds at least one frame")
        self.name = name
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self._frames: deque[bytes] = deque()
        self._wakeup = Wakeup()  # the viewer's stream, parked in wait()
        self.queued_bytes = 0
        self.dropped = 0
        self.cut = False
        self.closed = False

    @property
    def pending(self) -> int:
        return len(self._frames)

    def offer(self, frame: bytes) -> bool:
        """Queue ``frame``; False (and the viewer cut off) when it does not fit."""
        if self.cut or self.closed:
            return False
        frames = self._frames
        if len(frames) >= self.max_frames or self.queued_bytes + len(frame) > self.max_bytes:
            self.dropped += len(frames) + 1
            frames.clear()
            self.queued_bytes = 0
            self.cut = True
            self._wake()
            return False
        frames.append(frame)
        self.queued_bytes += len(frame)
        self._wake()
        return True

    def take(self) -> bytes | None:
        """The next frame, or None when none is waiting."""
        if not self._frames:
            return None
        frame = self._frames.popleft()
        self.queued_bytes -= len(frame)
        return frame

    async def wait(self, seconds: float) -> bool:
        """Wait until a frame is waiting, the viewer is cut or closed (True), or ``seconds``
        seconds pass (False)."""
        if self._frames or self.cut or self.closed:
            return True
        return await self._wakeup.wait_for(seconds)

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup.waiter is not None:
            wakeup.wake()


class Broadcast:
    """The viewers of one dashboard. Invariant: ``_viewers`` holds exactly the viewers that are
    neither cut off nor closed."""

    def __init__(
        self, *, max_frames: int = DEFAULT_QUEUE_FRAMES, max_bytes: int = DEFAULT_QUEUE_BYTES
    ) -> None:
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self._viewers: list[Viewer] = []
        self.published = 0  # frames published
        self.cut_off = 0  # viewers cut off for falling behind

    @property
    def viewers(self) -> int:
        return len(self._viewers)

    def attach(self, name: str = "viewer") -> Viewer:
        viewer = Viewer(name, self.max_frames, self.max_bytes)
        self._viewers.append(viewer)
        return viewer

    def detach(self, viewer: Viewer) -> None:
        viewer.close()
        if viewer in self._viewers:
            self._viewers.remove(viewer)

    def publish(self, frame: bytes) -> None:
        """Give ``frame`` (the same bytes) to every viewer; cut off those that are full."""
        self.published += 1
        behind: list[Viewer] | None = None
        for viewer in self._viewers:
            if not viewer.offer(frame):
                behind = behind or []
                behind.append(viewer)
        if behind:
            self.cut_off += len(behind)
            self._viewers = [v for v in self._viewers if v not in behind]

    def close_all(self) -> None:
        """End every stream (the server is stopping)."""
        viewers, self._viewers = self._viewers, []
        for viewer in viewers:
            viewer.close()
