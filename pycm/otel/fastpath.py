"""The sink's fast path: a fast, ok root reconcile decided at its end, before anything is built.

Nine in ten reconciles of a resync are fast, successful roots with nothing buffered for them:
for such a one the tail sampler's only rule left is the ratio (:class:`TailSampler.decide`'s
failed and slow rules have passed), so it is decided on the spot — dropped before any span data
exists (its trace id remembered lazily, :mod:`pycm.otel.decisions`), or, kept, its span handed
straight to the processor (encoded from the begin and end by :mod:`pycm.otel.reconcile_wire`
where the processor takes encoded spans). Everything else goes event by event to the sink's
``handle``.

Two forms of the same test, one for each form a reconcile reaches the sink in:

- events (:func:`fast_ok_root`, then the ratio on the trace id's low half as text):
  :meth:`FastPath.decide_inline`, the one place it is written;
- the bus's compact records (pycm.trace.bus), where the end's tag already says ok and not
  failed, the clock readings give the duration and the begin's id key says root:
  :meth:`FastPath.pairs` pair by pair, and :meth:`FastPath.root_run` for a whole run of roots
  under the bus's id key at once (the ratio rule then done for the run in
  :class:`~pycm.otel.lanes.RootRatio`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress
from typing import Any

from pycm.otel.causes import CauseWindow
from pycm.otel.decisions import DecisionMemory
from pycm.otel.export import RecordProcessor
from pycm.otel.lanes import RootRatio
from pycm.otel.reconcile_wire import encode_ok_reconcile, encode_ok_record
from pycm.otel.sampling import Decision, TailSampler
from pycm.otel.spans import SpanRecord, step_span
from pycm.trace.bus import RECONCILE_BEGIN, RECONCILE_END, Record, materialize, record_ids
from pycm.trace.context import root_low
from pycm.trace.events import Event, Outcome, StepBegin, StepEnd
from pycm.trace.kinds import ReconcileFinished, ReconcileResult, ReconcileStarted

__all__ = ["RUN_WINDOW", "FastPath", "fast_ok_root"]

# Pairs a call of FastPath.root_run takes at most (the run's slices and lanes are this long).
RUN_WINDOW = 256

_OK, _RESULT_ERROR, _SAMPLED = Outcome.OK, ReconcileResult.ERROR, Decision.SAMPLED
_NO_SLOW_RULE = 1 << 63  # slow_ns for a threshold of 0 (no reconcile is slow)


def fast_ok_root(end: ReconcileFinished, slow_ns: int) -> bool:
    """Whether a reconcile that ended so is a root the ratio alone decides: neither failed nor
    slower than ``slow_ns`` (TailSampler.decide's first two rules), and no step's child."""
    return (
        end.outcome is _OK
        and end.result is not _RESULT_ERROR
        and end.dur_ns <= slow_ns
        and not end.parent_id
    )


class FastPath:
    """Decides a drained batch's fast, ok root reconciles for the sink that owns the state it
    is handed (the open steps, the pending traces, the decisions, the held causes), and hands
    every other event to ``handle``, in order. ``records`` is the processor, where it takes
    encoded spans (else None: kept spans go through ``emit``)."""

    def __init__(
        self,
        *,
        sampler: TailSampler,
        memory: DecisionMemory,
        open_steps: dict[str, StepBegin],
        open_events: Mapping[str, object],
        pending: Mapping[str, object],
        causes: CauseWindow,
        records: RecordProcessor | None,
        on_spans: Callable[[list[bytes]], None],
        emit: Callable[[SpanRecord], None],
        follow: Callable[[str, str], None],
        follow_trigger: Callable[[Any], None],
        handle: Callable[[Event], None],
    ) -> None:
        self.sampler = sampler
        self.slow_ns = sampler.slow_ns if sampler.slow_ns > 0 else _NO_SLOW_RULE
        # "g" sorts after every 16 hex digits: ratio 1 keeps every id.
        self.bound_hex = sampler.ratio_bound_hex or "g"
        self.memory = memory
        self.open_steps = open_steps
        self.open_events = open_events
        self.pending = pending
        self.causes = causes
        # A kept reconcile's cause can be exported only if the window is on (a window of 0
        # turns the lookups off too) and something is held, or its root is still running.
        self.links = causes.active
        self.records = records
        self.on_spans = on_spans
        self.emit = emit
        self.follow = follow
        self.follow_trigger = follow_trigger
        self.handle = handle
        self._ratio: RootRatio | None = None  # the ratio rule for the root key's runs
        self._trace_head = b""  # Span.trace_id's tag and length, and the key's high half

    def decide_inline(self, begin: StepBegin, end: ReconcileFinished) -> int:
        """Decide a reconcile from its events if it is a fast, ok root with nothing buffered:
        1 kept (exported), 0 dropped (remembered), -1 not decided here (the caller hands it on)."""
        pending, open_events = self.pending, self.open_events
        if (
            not fast_ok_root(end, self.slow_ns)
            or (pending and end.trace_id in pending)
            or (open_events and end.span_id in open_events)
        ):
            return -1
        trace_id = end.trace_id
        if (
            trace_id[16:] < self.bound_hex
            if len(trace_id) == 32
            else self.sampler.by_ratio(trace_id)
        ):
            self.keep(begin, end)
            return 1
        self.memory.lazy.append(trace_id)
        return 0

    def keep(self, begin: Event, end: Event) -> None:
        """Export a fast, ok reconcile root kept by the ratio (not counted here)."""
        # (Always a reconcile's begin and end: the callers matched them.)
        assert type(begin) is ReconcileStarted and type(end) is ReconcileFinished
        self.memory.decided[end.trace_id] = _SAMPLED
        if self.records is not None:
            self.records.on_span(encode_ok_reconcile(begin, end))  # straight from the events
        else:
            self.emit(step_span(begin, end))
        if (
            self.links
            and begin.trigger_trace_id
            and (self.causes.held or begin.trigger_span_id in self.open_steps)
        ):
            self.follow(begin.trigger_trace_id, begin.trigger_span_id)

    def pairs(self, events: list[Event | Record]) -> tuple[int, int]:
        """Fold in a batch two events at a time where two are a reconcile's begin and its end
        (a resync's batches, where a sync that does not wait ends before the next begins): the
        begin is never held, and a fast, ok root is decided inline (a run of them under the
        bus's id key at once: :meth:`root_run`). An entry that does not start such a pair
        (another kind, a begin whose end is not next, the end of a begin held earlier) goes to
        :meth:`each` with the run of misfits it starts, in order, and the pairs resume after
        the run. Returns (dropped, kept) of the reconciles decided inline here or in
        :meth:`each` (counted by the caller)."""
        open_events = self.open_events
        pending = self.pending
        memory = self.memory
        slow_ns = self.slow_ns
        bound_int = self.sampler.ratio_bound
        started, finished = ReconcileStarted, ReconcileFinished
        drop = memory.lazy.append
        # Nothing buffered for any trace or open step: no lookups a reconcile (redone after
        # everything that takes the event-by-event path, which may buffer).
        clear = not pending and not open_events
        root_key = memory.root_key
        dropped = kept = 0
        n = len(events)
        last = n - 1  # the last index a pair can start at
        i = 0
        misfits = -1  # the index the run of entries waiting for each() starts at (-1: none)
        begin_tag, end_tag = RECONCILE_BEGIN, RECONCILE_END
        while i < n:
            first = events[i]
            second = events[i + 1] if i < last else None
            if type(first) is tuple:
                # The bus's compact records (see pycm.trace.bus for their layouts): decided on
                # their values, and built into events only when kept or sent on.
                if (
                    type(second) is not tuple
                    or first[0] != begin_tag
                    or second[0] != end_tag
                    or second[2] is not first  # not this begin's own end
                ):
                    if misfits < 0:
                        misfits = i
                    i += 1
                    continue
            elif (
                type(first) is not started
                or type(second) is not finished
                or second.span_id != first.span_id
            ):
                if misfits < 0:
                    misfits = i
                i += 1
                continue
            if misfits >= 0:
                # The run before this pair first, in order: it may buffer for the pair's trace.
                more_dropped, more_kept = self.each([materialize(e) for e in events[misfits:i]])
                dropped += more_dropped
                kept += more_kept
                misfits = -1
                drop = memory.lazy.append  # a new generation?
                clear = not pending and not open_events
            if type(first) is tuple and type(second) is tuple:
                ids = first[2][1]  # in the begin's head (pycm.trace.bus)
                if root_key is None and len(ids) == 3:  # the bus's key, first seen
                    memory.root_key = root_key = ids
                if clear and ids is root_key:
                    # A run of pairs under the bus's key, decided in one loop; then on here
                    # with the first pair it did not take, if any.
                    done, more_kept = self.root_run(events, i)
                    if done > i:
                        dropped += (done - i) // 2 - more_kept
                        kept += more_kept
                        i = done
                        continue
                i += 2
                # (An end tagged RECONCILE_END ended ok, with a result other than error.)
                fast = second[3] - first[3] <= slow_ns and not first[2][2]
                if fast and not clear:
                    trace_id, span_id = record_ids(first)
                    fast = not (trace_id in pending or span_id in open_events)
                if fast:
                    # A root's ids are derived from the bus's id key and the seq (pycm.trace.bus):
                    # the ratio rule compares the trace id's low half as the number it is, with
                    # no text made for it; a dropped one's trace id is made only if a decision
                    # is ever looked up (DecisionMemory.settle).
                    low = root_low(ids, first[1]) if len(ids) == 3 else int(ids[0][16:], 16)
                    if low >= bound_int:
                        if ids is root_key:
                            drop(first[1])
                        else:  # a redrawn key (after a fork), or a nested reconcile's ids
                            drop(record_ids(first)[0])
                        dropped += 1
                        continue
                    self.keep(materialize(first), materialize(second))
                    kept += 1
                    continue
                begin, end = materialize(first), materialize(second)
            else:
                i += 2
                assert type(first) is started and type(second) is finished  # (matched above)
                decided = self.decide_inline(first, second)
                if decided >= 0:
                    kept += decided
                    dropped += 1 - decided
                    continue
                begin, end = first, second
            # Failed, slow, a child, something buffered for it...
            more_dropped, more_kept = self.each((begin, end))
            dropped += more_dropped
            kept += more_kept
            # handle may have started a new generation
            drop = memory.lazy.append
            clear = not pending and not open_events
        if misfits >= 0:
            more_dropped, more_kept = self.each([materialize(e) for e in events[misfits:]])
            dropped += more_dropped
            kept += more_kept
        return dropped, kept

    def root_run(self, events: list[Event | Record], i: int) -> tuple[int, int]:
        """Decide the run of pairs from ``events[i]`` on that are a root reconcile's begin
        record (under the memory's ``root_key``) and its end, fast and ok, while nothing is
        buffered for any trace or open step (the caller's ``clear``): a resync's common case.
        The ratio rule is applied to the whole run at once (:class:`RootRatio`); a dropped one
        is remembered as its seq, with no text made for it. Returns the index of the first
        entry not taken and how many of the pairs taken were kept (the rest were dropped).

        ``events`` are in the log's order (as a subscription drains them), so a run's records
        have rising seqs and clock readings (the bus's monotonic clock, read as each record
        is appended). When its last begin's seq is its first's plus two a pair, the run is
        seqs in a row, and when its last end is within the slow threshold of its first begin,
        so is each reconcile in it: then neither is read pair by pair (those ints are objects
        of their own, and a drain finds them long out of the CPU's caches; see
        docs/operations.md for the measurement)."""
        key = self.memory.root_key
        assert key is not None
        slow_ns = self.slow_ns
        end_tag = RECONCILE_END
        # At most RUN_WINDOW pairs a call (the caller calls again where a run goes on): the
        # slices copy no more than that, however often misfits break the runs.
        stop = i + 2 * RUN_WINDOW
        begins: list[Any] = events[i:stop:2]
        ends: list[Any] = events[i + 1 : stop : 2]
        n = 0
        try:
            for begin, end in zip(begins, ends, strict=False):
                # (A begin holding the bus's key is a root's: its parent_id is empty.)
                if (
                    end[2] is not begin  # not this begin's own end (an end holds its begin)
                    or end[0] != end_tag  # failed
                    or begin[2][1] is not key
                ):
                    break
                n += 1
        except TypeError:  # ``end`` is an event, not a record: not subscriptable
            pass
        if not n:
            return i, 0
        ratio = self._ratio
        if ratio is None:
            ratio = self._ratio = RootRatio(key, self.sampler.ratio_bound)
            self._trace_head = b"\x0a\x10" + bytes.fromhex(key[0])
        first = begins[0][1]
        seqs: Sequence[int]
        if begins[n - 1][1] - first == 2 * (n - 1) and ends[n - 1][3] - begins[0][3] <= slow_ns:
            seqs = range(first, first + 2 * n, 2)
            drops, lanes = ratio.decide_run(first, n)
        else:  # a gap in the seqs (a filtered or lossy read), or a slow one in the run
            listed: list[int] = []
            take = listed.append
            for begin, end in zip(begins[:n], ends, strict=False):
                if end[3] - begin[3] > slow_ns:
                    break
                take(begin[1])
            if not listed:
                return i, 0
            seqs = listed
            drops, lanes = ratio.decide(listed)
        lazy = self.memory.lazy
        lazy.extend(compress(seqs, drops))
        kept = 0
        j = drops.find(0)
        if j >= 0:
            head = self._trace_head
            takes_records = self.records is not None
            spans: list[bytes] = []
            links, held, open_steps = self.links, self.causes.held, self.open_steps
            while j >= 0:
                begin, end = begins[j], ends[j]
                lazy.append(-seqs[j])
                if takes_records:
                    span_id = lanes[16 * j : 16 * j + 8][::-1]
                    ids = b"".join((head, span_id, b"\x12\x08", span_id))
                    spans.append(encode_ok_record(begin, end, ids))
                else:
                    self.emit(_record_span(begin, end))
                kept += 1
                if links and begin[8] is not None and (held or open_steps):  # its trigger
                    self.follow_trigger(begin[8])
                j = drops.find(0, j + 1)
            if spans:
                self.on_spans(spans)
        return i + 2 * len(seqs), kept

    def each(self, events: Iterable[Event]) -> tuple[int, int]:
        """Fold in events one by one: a reconcile root's begin is held until its end, which is
        decided inline as in :meth:`pairs`; every other event takes ``handle``. Returns
        (dropped, kept) of the reconciles decided inline (counted by the caller)."""
        handle = self.handle
        open_steps = self.open_steps
        open_pop = open_steps.pop
        started, finished = ReconcileStarted, ReconcileFinished
        dropped = kept = 0
        for event in events:
            if type(event) is started:
                # Held until its end; the bound on open steps is kept after the batch.
                open_steps[event.span_id] = event
                continue
            if type(event) is finished:
                begin = open_pop(event.span_id, None)
                if begin is not None:
                    decided = self.decide_inline(begin, event)
                    if decided >= 0:
                        kept += decided
                        dropped += 1 - decided
                        continue
                    open_steps[event.span_id] = begin  # the sink's _end takes it from there
            handle(event)
        return dropped, kept


def _record_span(begin: Record, end: Record) -> SpanRecord:
    """The span of a reconcile's begin and end records, built (for a processor that takes the
    SDK's spans)."""
    b, e = materialize(begin), materialize(end)
    assert isinstance(b, StepBegin) and isinstance(e, StepEnd)  # a reconcile's records
    return step_span(b, e)
