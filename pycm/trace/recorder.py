"""Recording the bus to JSON lines (``--trace-file``), and reading and replaying a recording.

:class:`Recorder` is an ordinary bounded bus subscriber. Its task parks until events wait, takes
everything waiting (up to ``batch_limit``) in one :meth:`~pycm.trace.bus.Subscription.drain`,
and hands the batch to a worker thread (``asyncio.to_thread``) that encodes it, joins the lines
and writes them with one ``write`` call, rotating between lines. The emitter never waits for the
disk: when the disk is slow the recorder's queue overflows like any other subscriber's, and the
:class:`~pycm.trace.kinds.SubscriberLagged` notice the bus hands out is written into the file as
an event, so a replay shows the gap and its size.

Why a thread per batch rather than writes on the loop (measured here, ~300-byte lines): encoding
and writing a batch of 1024 events takes ~2.9 ms on the loop and ~3.3 ms through a thread — the
hand-off costs ~80–110 µs, so batching makes it a few per cent, where one hand-off per event would
cost 30 times the write. What the thread buys is that the loop never waits on the kernel: a write
on the loop stalls every task for as long as the disk takes (milliseconds on a busy disk, minutes
on a hung network mount), a write in a thread stalls only the recorder, which then lags, visibly.
Encoding happens in the thread too (it still holds the GIL, so it is not free for the loop, but
the loop's part of a batch is only the drain). Each batch is joined into one ``bytes`` and flushed
before the thread returns, so nothing the recorder took from the bus waits in a buffer after a
crash. End to end, a recorder keeps up with ~180 000 events/s.

Rotation follows :class:`logging.handlers.RotatingFileHandler`: before a line that would take the
file past ``max_bytes``, ``path`` becomes ``path.1``, ``path.1`` becomes ``path.2`` and so on, and
the oldest beyond ``backups`` is deleted. A line is never split, so a file exceeds ``max_bytes``
only when a single line is larger than ``max_bytes`` (it then has that file to itself).

:func:`read_events` reads a recording back (the rotated set too, oldest first), tolerating a
truncated last line — a recording cut by a crash — and any bad line, which it reports with its
file and line number instead of raising. :func:`replay` yields the events again paced by their
timestamps.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pycm.trace.bus import Bus, Subscription
from pycm.trace.codec import CodecError, decode, encode
from pycm.trace.events import Event
from pycm.trace.kinds import SubscriberLagged
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = [
    "DEFAULT_BACKUPS",
    "DEFAULT_MAX_BYTES",
    "BadLine",
    "ReadStats",
    "Recorder",
    "no_events_in",
    "read_events",
    "recording_files",
    "recording_problem",
    "replay",
]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_BACKUPS = 3
# The recorder's queue: at ~500 bytes an event this is ~8 MB in the worst case, and about a
# second of the busiest manager we have measured, which covers an ordinary disk hiccup.
DEFAULT_QUEUE = 16384
# Events per write: enough that the ~100 µs thread hand-off is a few per cent of the batch, few
# enough that one batch's bytes (~300 KiB) are a small allocation and a ~3 ms write.
DEFAULT_BATCH_LIMIT = 1024


class Recorder:
    """Writes the events of a subscription to ``path`` as JSON lines, rotating by size.

    Use ``sub = recorder.attach(bus)`` and run ``recorder.run(sub)`` as a task; stopping it
    (cancellation, or closing the subscription) writes what is already waiting first.
    :meth:`flush` writes everything waiting now; :meth:`close` flushes, stops receiving and
    closes the file. Only one :meth:`run` may be active at a time. A write error (a full disk)
    ends :meth:`run` with the ``OSError``; the events of that batch are lost, the file keeps
    every line written before it.

    Invariant: ``_size`` is the size of the open file (or of ``path`` on disk before the first
    write), and writes happen only under ``_lock``, in the order their batches were drained.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        batch_limit: int = DEFAULT_BATCH_LIMIT,
    ) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        if backups < 0:
            raise ValueError("backups cannot be negative")
        if batch_limit < 1:
            raise ValueError("batch_limit must be at least 1")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self.batch_limit = batch_limit
        self._file: BinaryIO | None = None
        self._size = 0
        self._lock = asyncio.Lock()
        self._subscription: Subscription | None = None
        self._closed = False
        self.events_written = 0
        self.rotations = 0

    def attach(
        self, bus: Bus, *, name: str = "recorder", maxsize: int = DEFAULT_QUEUE
    ) -> Subscription:
        """Subscribe to ``bus`` for this recorder; pass the result to :meth:`run`."""
        sub = bus.subscribe(name=name, maxsize=maxsize)
        self._subscription = sub
        return sub

    async def run(self, subscription: Subscription | None = None) -> None:
        """Write batches from ``subscription`` until it closes or this task is cancelled."""
        sub = subscription or self._subscription
        if sub is None:
            raise RuntimeError("Recorder.run needs a subscription (see attach)")
        self._subscription = sub
        try:
            while True:
                await sub.wait()
                if not await self._write_batch(sub) and sub.closed:
                    return
        except asyncio.CancelledError:
            # Stopping is cancellation: what was already received still goes to the file.
            await self._write_all(sub)
            raise

    async def flush(self) -> None:
        """Write every event the subscription holds now (returns when they are on disk)."""
        if self._subscription is not None:
            await self._write_all(self._subscription)

    async def close(self) -> None:
        """Flush, stop receiving and close the file. Idempotent."""
        if self._closed:
            return
        sub = self._subscription
        if sub is not None:
            sub.close()
            await self._write_all(sub)
        self._closed = True
        async with self._lock:
            if self._file is not None:
                await _in_thread(self._file.close)
                self._file = None

    async def _write_all(self, sub: Subscription) -> None:
        while await self._write_batch(sub):
            pass

    async def _write_batch(self, sub: Subscription) -> bool:
        """Drain one batch and write it; False when nothing was waiting."""
        async with self._lock:
            # Drained under the lock, so batches reach the file in the order they left the bus.
            batch = sub.drain(self.batch_limit)
            if not batch:
                return False
            if self._closed:
                raise RuntimeError("the recorder is closed")
            await _in_thread(self._write_lines, batch)
            return True

    # --- the worker thread's half: blocking file work, one call at a time (under _lock) ---

    def _open(self) -> BinaryIO:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "ab")  # noqa: SIM115 (kept open across batches)
            self._size = self._file.tell()
        return self._file

    def _write_lines(self, events: list[Event]) -> None:
        out = self._open()
        chunk: list[bytes] = []
        chunk_size = 0
        for event in events:
            line = encode(event) + b"\n"
            if self._size + chunk_size > 0 and self._size + chunk_size + len(line) > self.max_bytes:
                if chunk:
                    out.write(b"".join(chunk))
                    chunk.clear()
                out = self._rotate()
                chunk_size = 0
            chunk.append(line)
            chunk_size += len(line)
        if chunk:
            out.write(b"".join(chunk))
        out.flush()
        self._size += chunk_size
        self.events_written += len(events)

    def _rotate(self) -> BinaryIO:
        """Shift ``path`` → ``path.1`` → … (dropping the oldest) and reopen ``path`` empty."""
        if self._file is not None:
            self._file.close()
            self._file = None
        base = str(self.path)
        if self.backups == 0:
            os.remove(base)
        else:
            for i in range(self.backups - 1, 0, -1):
                older = f"{base}.{i}"
                if os.path.exists(older):
                    os.replace(older, f"{base}.{i + 1}")
            os.replace(base, f"{base}.1")
        self.rotations += 1
        self._size = 0
        return self._open()


async def _in_thread(fn: Callable[..., object], *args: object) -> None:
    """Run blocking ``fn`` in a worker thread; if cancelled meanwhile, wait for the thread to
    finish before re-raising (a thread cannot be stopped, and the next write must not start
    while this one is still going)."""
    future = asyncio.get_running_loop().run_in_executor(None, fn, *args)
    try:
        await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait({future})
        raise


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that is not an event: where it is, why, and its first bytes."""

    path: str
    line: int  # 1-based
    error: str
    text: str
    truncated: bool = False  # the file's last line, cut short (no newline)


@dataclass(slots=True)
class ReadStats:
    """What :func:`read_events` went through; filled in as it reads."""

    files: list[str] = field(default_factory=list)
    lines: int = 0
    events: int = 0
    bad: list[BadLine] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        """Whether a file ended in a cut-off line (a recording stopped by a crash)."""
        return any(b.truncated for b in self.bad)


def recording_files(path: str | os.PathLike[str]) -> list[Path]:
    """The rotated set of a recording, oldest first: ``path.N`` … ``path.1``, ``path``.

    Only the unbroken run ``path.1``, ``path.2``, … counts (a rotation never leaves a hole); the
    base file is listed even when missing, so reading it reports the error.
    """
    base = Path(path)
    rotated: list[Path] = []
    i = 1
    while True:
        candidate = Path(f"{base}.{i}")
        if not candidate.is_file():
            break
        rotated.append(candidate)
        i += 1
    return [*reversed(rotated), base]


_BAD_TEXT_LIMIT = 80


def read_events(
    path: str | os.PathLike[str],
    *,
    rotated: bool = False,
    stats: ReadStats | None = None,
    on_bad_line: Callable[[BadLine], None] | None = None,
) -> Generator[Event, None, None]:
    """The events recorded in ``path`` (with ``rotated``, its rotated set, oldest first).

    A line that does not decode is skipped and reported to ``on_bad_line`` and in ``stats``;
    empty lines are skipped silently. Only a missing or unreadable file raises (``OSError``,
    when iteration starts). Reading is blocking: async code calls it in a thread (see
    :func:`replay`).
    """
    stats = stats if stats is not None else ReadStats()
    files = recording_files(path) if rotated else [Path(path)]
    for file in files:
        yield from _read_file(file, stats, on_bad_line)


def _read_file(
    file: Path, stats: ReadStats, on_bad_line: Callable[[BadLine], None] | None
) -> Iterator[Event]:
    with open(file, "rb") as f:
        stats.files.append(str(file))
        number = 0
        for raw in f:
            number += 1
            stats.lines += 1
            complete = raw.endswith(b"\n")
            data = raw.rstrip(b"\r\n")
            if not data.strip():
                continue
            try:
                event = decode(data)
            except CodecError as exc:
                bad = BadLine(
                    path=str(file),
                    line=number,
                    error=str(exc),
                    text=data[:_BAD_TEXT_LIMIT].decode("utf-8", "replace"),
                    truncated=not complete,
                )
                stats.bad.append(bad)
                if on_bad_line is not None:
                    on_bad_line(bad)
                continue
            stats.events += 1
            yield event


NOT_A_RECORDING_AFTER = 100
"""Lines that are not events, with no event before them, after which a file is no recording."""


def no_events_in(bad_lines: int, first: str = "") -> str:
    """What to say of a file whose ``bad_lines`` lines (all it has) are none of them an event;
    ``first`` says why the first one is not."""
    return f"not a recording: none of its {bad_lines} line(s) is an event" + (
        f" ({first})" if first else ""
    )


def recording_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be replayed, or None: it is missing, not a file, unreadable, or not
    a recording — none of its lines before the :data:`NOT_A_RECORDING_AFTER`-th bad one is an
    event. A file with no line yet (a recorder that saw nothing) is a recording. Reads up to
    the first event.

    A damaged recording (a truncated or garbled line among events) is still one: the readers
    skip and report such lines. This catches the wrong file given where a recording is wanted.
    """
    if not os.path.exists(path):
        return "no such file"
    if not os.path.isfile(path):
        return "not a file"
    bad = 0
    first = ""

    def count(line: BadLine) -> None:
        nonlocal bad, first
        bad += 1
        first = first or f"line {line.line}: {line.error}"
        if bad >= NOT_A_RECORDING_AFTER:
            raise _NoEventYet

    try:
        for _ in read_events(path, on_bad_line=count):
            return None
    except _NoEventYet:
        return f"not a recording: its first {bad} lines are not events ({first})"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return no_events_in(bad, first) if bad else None


class _NoEventYet(Exception):
    pass


_REPLAY_CHUNK = 512


async def replay(
    path: str | os.PathLike[str],
    *,
    speed: float = 1.0,
    clock: Clock = REAL_CLOCK,
    rotated: bool = False,
    stats: ReadStats | None = None,
    on_bad_line: Callable[[BadLine], None] | None = None,
) -> AsyncIterator[Event]:
    """Yield the recorded events again, paced by their ``ts``: ``speed`` 2 plays twice as fast;
    0 or ``inf`` plays as fast as possible.

    Pacing is against the start of the replay, not event to event, so time spent by the consumer
    is not added to every gap: the event with timestamp ``ts`` comes out at
    ``(ts - first_ts) / speed`` after the first one (or at once, when that moment has passed).
    Lag notices are yielded in place but do not move the schedule: their ``ts`` is the moment
    the recorder read them, later than the events that follow them in the file.
    """
    if math.isnan(speed) or speed < 0:
        raise ValueError(f"speed must be >= 0, not {speed!r}")
    paced = speed not in (0, math.inf)
    events = read_events(path, rotated=rotated, stats=stats, on_bad_line=on_bad_line)
    first_ts: int | None = None
    start_ns = 0
    try:
        while True:
            chunk = await asyncio.to_thread(_take, events, _REPLAY_CHUNK)
            if not chunk:
                return
            for event in chunk:
                if paced and not isinstance(event, SubscriberLagged) and event.ts:
                    if first_ts is None:
                        first_ts, start_ns = event.ts, clock.monotonic_ns()
                    else:
                        due_ns = start_ns + (event.ts - first_ts) / speed
                        wait_ns = due_ns - clock.monotonic_ns()
                        if wait_ns > 0:
                            await clock.sleep(wait_ns / 1e9)
                yield event
    finally:
        events.close()  # closes the open file now, not whenever the generator is collected


def _take(events: Iterator[Event], n: int) -> list[Event]:
    out: list[Event] = []
    for event in events:
        out.append(event)
        if len(out) >= n:
            break
    return out
