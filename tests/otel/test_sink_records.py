"""The sink fed a subscription's entries (a reconcile's compact records, as the manager's sink
task drains them) decides, exports and counts exactly as when fed the built events, and builds
no event for a reconcile it drops."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

import pycm.otel.fastpath as fastpath_module
from pycm.controller import Controller, Result
from pycm.otel.lanes import RootRatio
from pycm.otel.metrics import SinkMetrics
from pycm.otel.reconcile_wire import encode_ok_reconcile
from pycm.otel.resource import build_resource
from pycm.otel.sampling import TailSampler
from pycm.otel.sink import OtelSink
from pycm.trace.bus import Bus, materialize
from pycm.trace.context import note_call
from pycm.trace.kinds import ControllerStarted
from pycm.util.clock import FakeClock
from tests.otel.test_sink_batches import _outcome, _Records, _splits


async def _resync(
    n: int, *, mixed: bool = True, slow: tuple[int, ...] = ()
) -> tuple[list[Any], list[Any]]:
    """(entries, events) of the same ``n`` reconciles through ``Controller.process``: fast ok
    ones, with failures, slow ones and API calls mixed in unless not ``mixed`` (then only the
    reconciles at the indices in ``slow`` are slow)."""
    clock = FakeClock(wall_start_ns=1_700_000_000_000_000_000)
    bus = Bus(instance="pycm-0", clock=clock)
    rng = random.Random(11)
    rolls: dict[str, float] = {}

    async def sync(key: str) -> Result | None:
        roll = rolls[key]
        if roll < 0.05:
            raise RuntimeError("boom")
        if roll < 0.10:
            clock.advance(2.0)  # slower than the sampler's 1 s threshold
        elif roll < 0.15:
            note_call()
        return None

    ctrl = Controller("deployment", sync, resource="deployments", clock=clock, bus=bus)
    entries_sub = bus.subscribe(name="entries", maxsize=10 * n)
    events_sub = bus.subscribe(name="events", maxsize=10 * n)
    for i in range(n):
        key = f"default/d{i}"
        rolls[key] = rng.random() if mixed else 0.07 if i in slow else 1.0
        await ctrl.process(key)
    await ctrl.queue.aclose()
    return entries_sub.drain_entries(), events_sub.drain()


def _sink(processor: Any, registry: CollectorRegistry, ratio: float) -> OtelSink:
    return OtelSink(
        processor,
        resource=build_resource("r", {}, version="9.9.9"),
        sampler=TailSampler(ratio, 1.0),
        metrics=SinkMetrics(registry),
    )


def test_the_worker_appends_records_that_the_sink_reads_as_they_are() -> None:
    entries, events = asyncio.run(_resync(400))
    assert len(entries) == len(events) > 800  # failures add the queue's own events
    assert sum(type(e) is tuple for e in entries) == 800  # the record path is what is tested
    assert [materialize(e) for e in entries] == events


@pytest.mark.parametrize("records", [True, False], ids=["records", "sdk-spans"])
def test_sink_decides_entries_as_it_decides_their_events(records: bool) -> None:
    entries, events = asyncio.run(_resync(400))
    from_events = _outcome([events], records)
    exported, _, decided, _, counts = from_events
    assert exported and decided and counts["traces_dropped"] > 100  # kept, failed and dropped
    assert _outcome([entries], records) == from_events
    assert _outcome([[e] for e in entries], records) == from_events
    assert _outcome([entries[1:], entries[:1]][::-1], records) == _outcome(
        [events[1:], events[:1]][::-1], records
    )
    for seed in range(3):
        assert _outcome(_splits(entries, seed), records) == from_events


def test_a_dropped_fast_reconcile_is_never_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resync's batch (every sync fast and ok) at ratio 0: every trace dropped, no event built.
    (Entries that are not a begin and its end are built and taken event by event:
    test_sink_decides_entries_as_it_decides_their_events covers that, and
    test_a_misfit_mid_batch_leaves_the_later_pairs_on_the_record_path the pairs after one.)"""
    entries, _ = asyncio.run(_resync(400, mixed=False))
    built: list[Any] = []

    def counting(entry: Any) -> Any:
        if type(entry) is tuple:  # (events pass through it unchanged)
            built.append(entry)
        return materialize(entry)

    monkeypatch.setattr(fastpath_module, "materialize", counting)
    sink = _sink(_Records(), CollectorRegistry(), ratio=0.0)
    sink.handle_batch(entries)
    assert sink._tally.since_report["traces_dropped"] == 400 and built == []
    # At ratio 1 the same batch is kept whole, encoded from the records: still none built,
    # and the spans are the events' own encoding.
    records = _Records()
    kept = _sink(records, CollectorRegistry(), ratio=1.0)
    kept.handle_batch(entries)
    assert kept._tally.since_report["traces_exported"] == 400 and built == []
    events = [materialize(e) for e in entries[:800]]  # (then the queue's shutdown)
    pairs = zip(events[::2], events[1::2], strict=True)
    assert records.spans == [encode_ok_reconcile(b, e) for b, e in pairs]  # type: ignore[arg-type]


@pytest.mark.parametrize("records", [True, False], ids=["records", "sdk-spans"])
def test_a_misfit_mid_batch_leaves_the_later_pairs_on_the_record_path(
    records: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry that is not a begin followed by its end (here a point between a begin and its
    end, at an odd index) goes event by event with the entries around it that cannot pair; the
    pairs after it are decided on their records again, with the same results."""
    entries, events = asyncio.run(_resync(400, mixed=False))
    point = ControllerStarted(controller="other", workers=1, seq=10_000)
    mid = 401  # between the begin at 400 and its end at 402
    entries.insert(mid, point)
    events.insert(mid, point)
    built: list[Any] = []

    def counting(entry: Any) -> Any:
        if type(entry) is tuple:
            built.append(entry)
        return materialize(entry)

    from_events = _outcome([events], records)
    monkeypatch.setattr(fastpath_module, "materialize", counting)
    assert _outcome([entries], records) == from_events
    # Built: the split reconcile's begin and end (taken event by event), and, for SDK spans,
    # each other pair kept at the ratio (0.5) (encoded spans are written from the records);
    # none of the pairs dropped after the point (before the pairs resumed after a misfit,
    # every entry after it was built).
    _, _, decided, _, counts = from_events
    assert counts["traces_exported"] + counts["traces_dropped"] == 400
    split_kept = decided[materialize(entries[400]).trace_id].keep
    kept_built = 0 if records else 2 * (counts["traces_exported"] - split_kept)
    assert len(built) == 2 + kept_built
    assert counts["traces_dropped"] > 150  # ... of which there were many


@pytest.mark.parametrize("records", [True, False], ids=["records", "sdk-spans"])
def test_a_run_with_a_gap_or_a_slow_reconcile_is_decided_as_its_events(records: bool) -> None:
    """A run of pairs is taken whole, its seqs and durations unread, only when its seqs are
    in a row and it spans less than the slow threshold: a gap (pairs a filtered or lossy read
    left out) or a slow reconcile in it must not change a decision or an id."""
    entries, events = asyncio.run(_resync(600, mixed=False, slow=(150, 451)))
    gone = {2 * k + d for k in (40, 41, 300) for d in (0, 1)}  # three pairs left out
    gapped = [e for j, e in enumerate(entries) if j not in gone]
    gapped_events = [e for j, e in enumerate(events) if j not in gone]
    for batch, its_events in ((entries, events), (gapped, gapped_events)):
        from_events = _outcome([its_events], records)
        _, _, decided, _, counts = from_events
        assert counts["traces_exported"] > 200 and counts["traces_dropped"] > 200
        slow_ones = [e for e in map(materialize, batch) if getattr(e, "key", "") == "default/d150"]
        assert decided[slow_ones[0].trace_id].keep  # kept as slow, whatever the ratio says
        assert _outcome([batch], records) == from_events
        for seed in range(2):
            assert _outcome(_splits(batch, seed), records) == from_events


def test_a_resyncs_runs_are_decided_without_reading_their_seqs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entries, _ = asyncio.run(_resync(600, mixed=False))
    listed: list[int] = []
    decide = RootRatio.decide

    def counting(self: RootRatio, seqs: list[int]) -> tuple[bytes, bytes]:
        listed.append(len(seqs))
        return decide(self, seqs)

    monkeypatch.setattr(RootRatio, "decide", counting)
    sink = _sink(_Records(), CollectorRegistry(), ratio=0.1)
    sink.handle_batch(entries)
    assert (
        sink._tally.since_report["traces_exported"] + sink._tally.since_report["traces_dropped"]
        == 600
    )
    assert listed == []  # every run (256 pairs at most) by decide_run
