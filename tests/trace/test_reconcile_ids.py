"""A root reconcile draws no ids: they are derived from its bus's id key and its begin's seq
(pycm.trace.context.new_id_key / reconcile_ids). Every reader must derive the same ones, and
they must be valid W3C ids, unique, and spread evenly enough for the ratio sampler."""

from __future__ import annotations

import asyncio
import re

import pytest

from pycm.controller import Controller
from pycm.otel.sampling import TailSampler
from pycm.trace import bus as bus_module
from pycm.trace.bus import Bus, materialize, record_ids
from pycm.trace.context import current_span, new_id_key, reconcile_ids
from pycm.trace.kinds import (
    ApiRequestCompleted,
    ControllerInitBegan,
    ReconcileFinished,
    ReconcileStarted,
)
from pycm.util.clock import FakeClock, RealClock

_TRACE = re.compile(r"[0-9a-f]{32}")
_SPAN = re.compile(r"[0-9a-f]{16}")


def test_derived_ids_are_w3c_valid_unique_and_a_roots_span_is_its_trace_ids_low_half() -> None:
    key = new_id_key()
    high, mult, add = key
    assert _SPAN.fullmatch(high) and high != "0" * 16
    assert mult % 2 == 1
    # The one seq whose span id would be all zeros is past any seq a bus reaches.
    assert (-add * pow(mult, -1, 1 << 64)) % (1 << 64) >= 1 << 63
    ids = [reconcile_ids(key, seq) for seq in range(1, 20_001)]
    for trace_id, span_id in ids[:100]:
        assert _TRACE.fullmatch(trace_id) and _SPAN.fullmatch(span_id)
        assert trace_id[16:] == span_id and span_id != "0" * 16
    assert len({t for t, _ in ids}) == len(ids)


def test_each_bus_and_each_run_has_its_own_key() -> None:
    a, b = Bus(), Bus()
    assert a.id_key != b.id_key
    assert reconcile_ids(a.id_key, 1)[0] != reconcile_ids(b.id_key, 1)[0]
    assert len({new_id_key() for _ in range(50)}) == 50


def test_a_forked_child_derives_ids_of_its_own() -> None:
    bus = Bus()
    before = bus.id_key
    bus_module._rekey()  # what os.register_at_fork runs in the child
    assert bus.id_key != before


@pytest.mark.asyncio
async def test_reconciles_follow_the_buses_instance_and_key_and_old_ones_keep_theirs() -> None:
    # A controller's root reconciles share one head (its instance, the bus's id key, ...):
    # one made before the bus is named, or before a fork redraws the key, must take the new
    # one, and the records made before must keep what they were made with.
    bus = Bus(clock=FakeClock())

    async def sync(key: str) -> None:
        return None

    ctrl = Controller("c", sync, clock=bus.clock, bus=bus)
    first_key = bus.id_key
    with bus.subscribe(name="entries") as entries:
        await ctrl.process("ns/a")
        bus.instance = "pycm-1"
        await ctrl.process("ns/b")
        bus_module._rekey()
        await ctrl.process("ns/c")
        raw = entries.drain_entries()
    events = [materialize(e) for e in raw]
    begins = [e for e in events if isinstance(e, ReconcileStarted)]
    ends = [e for e in events if isinstance(e, ReconcileFinished)]
    assert [e.instance for e in begins] == ["", "pycm-1", "pycm-1"]
    assert [e.instance for e in ends] == ["", "pycm-1", "pycm-1"]
    assert [(e.trace_id, e.span_id) for e in begins] == [
        reconcile_ids(first_key, begins[0].seq),
        reconcile_ids(first_key, begins[1].seq),
        reconcile_ids(bus.id_key, begins[2].seq),
    ]
    assert bus.id_key != first_key
    # Read again now, the first two still carry what they were made with.
    assert [materialize(e) for e in raw] == events
    await ctrl.queue.aclose()


@pytest.mark.parametrize("ratio", [0.1, 0.5])
def test_the_ratio_rule_keeps_its_ratio_over_consecutive_reconciles(ratio: float) -> None:
    sampler = TailSampler(ratio, 1.0)
    key = new_id_key()
    n = 20_000
    # A no-op resync's begin seqs are every other seq.
    kept = sum(sampler.by_ratio(reconcile_ids(key, seq)[0]) for seq in range(1, 2 * n, 2))
    # The key is random each run, so the count is a binomial draw: within 5 standard deviations
    # (0.018 at 0.5; the old 0.01 was 2.8 of them there and failed a run in ~200).
    assert abs(kept / n - ratio) < 5 * (ratio * (1 - ratio) / n) ** 0.5


@pytest.mark.asyncio
async def test_every_reader_derives_the_same_ids_for_a_reconcile() -> None:
    clock = FakeClock()
    bus = Bus(clock=clock)
    seen: dict[str, object] = {}

    async def sync(key: str) -> None:
        seen["current"] = current_span()
        bus.point(ApiRequestCompleted(verb="get"))  # a child point
        with bus.step(ControllerInitBegan(controller="child")):  # a child step
            seen["in_child"] = current_span()

        async def helper() -> None:
            seen["task"] = current_span()

        await asyncio.create_task(helper())

    ctrl = Controller("c", sync, clock=clock, bus=bus)
    with bus.subscribe(name="events") as events, bus.subscribe(name="entries") as entries:
        await ctrl.process("ns/a")
        built = events.drain()
        raw = entries.drain_entries()
    begin = next(e for e in built if isinstance(e, ReconcileStarted))
    end = next(e for e in built if isinstance(e, ReconcileFinished))
    ids = (begin.trace_id, begin.span_id)
    assert _TRACE.fullmatch(ids[0]) and ids[1] == ids[0][16:] and begin.parent_id == ""
    assert (end.trace_id, end.span_id) == ids
    assert seen["current"] == ids and seen["task"] == ids
    point = next(e for e in built if isinstance(e, ApiRequestCompleted))
    assert (point.trace_id, point.parent_id) == ids
    child = next(e for e in built if isinstance(e, ControllerInitBegan))
    assert (child.trace_id, child.parent_id) == ids
    assert seen["in_child"] == (ids[0], child.span_id)
    # The records, built again or read as they are, and the ring.
    assert [materialize(e) for e in raw] == built
    assert record_ids(raw[0]) == ids
    assert [e for e in bus.recent() if isinstance(e, ReconcileStarted)] == [begin]
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_a_reconcile_inside_a_step_is_its_child_with_ids_of_its_own() -> None:
    bus = Bus(clock=FakeClock())

    async def sync(key: str) -> None:
        pass

    ctrl = Controller("c", sync, bus=bus)
    with bus.subscribe(name="t") as sub:
        with bus.step(ControllerInitBegan(controller="outer")) as outer:
            await ctrl.process("ns/a")
        events = sub.drain()
    begin = next(e for e in events if isinstance(e, ReconcileStarted))
    assert begin.trace_id == outer.trace_id and begin.parent_id == outer.span_id
    assert _SPAN.fullmatch(begin.span_id) and begin.span_id != outer.span_id
    await ctrl.queue.aclose()


class _SteppedClock(RealClock):
    """The real clock's kind (so the bus derives wall times) with readings the test sets."""

    def __init__(self) -> None:
        self.mono = 5_000_000_000
        self.wall = 1_700_000_000_000_000_000
        self.wall_reads = 0

    def monotonic_ns(self) -> int:  # type: ignore[override]
        return self.mono

    def wall_ns(self) -> int:  # type: ignore[override]
        self.wall_reads += 1
        return self.wall


@pytest.mark.asyncio
async def test_the_begins_wall_time_is_derived_for_a_second_then_read_again() -> None:
    clock = _SteppedClock()
    bus = Bus(clock=clock)

    async def sync(key: str) -> None:
        pass

    ctrl = Controller("c", sync, bus=bus)
    with bus.subscribe(name="t", kinds=(ReconcileStarted.KIND,)) as sub:
        await ctrl.process("ns/a")  # reads the wall clock (no offset yet)
        clock.mono += 400_000_000
        clock.wall += 400_000_000 + 7  # the wall clock slewed 7 ns meanwhile: not read
        await ctrl.process("ns/a")
        clock.mono += 700_000_000  # past the second: read again
        clock.wall += 700_000_000
        await ctrl.process("ns/a")
        first, second, third = sub.drain()
    assert clock.wall_reads == 2
    assert second.ts == first.ts + 400_000_000  # derived: off by the slew, 7 ns
    assert third.ts == clock.wall
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_a_fake_clocks_wall_time_is_read_exactly_for_every_begin() -> None:
    clock = FakeClock()
    bus = Bus(clock=clock)

    async def sync(key: str) -> None:
        pass

    ctrl = Controller("c", sync, clock=clock, bus=bus)
    with bus.subscribe(name="t", kinds=(ReconcileStarted.KIND,)) as sub:
        await ctrl.process("ns/a")
        clock.set_wall_ns(clock.wall_ns() + 12_345)  # a step, without monotonic time moving
        await ctrl.process("ns/a")
        first, second = sub.drain()
    assert second.ts == first.ts + 12_345
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_a_reconcile_inside_a_reconcile_is_its_child_and_counts_its_own_calls() -> None:
    from pycm.trace.context import note_call

    bus = Bus(clock=FakeClock())

    async def inner_sync(key: str) -> None:
        note_call()

    inner = Controller("inner", inner_sync, bus=bus)

    async def outer_sync(key: str) -> None:
        note_call()
        await inner.process("ns/b")
        note_call()

    outer = Controller("outer", outer_sync, bus=bus)
    with bus.subscribe(name="t") as sub:
        await outer.process("ns/a")
        events = sub.drain()
    begins = {e.controller: e for e in events if isinstance(e, ReconcileStarted)}
    ends = {e.controller: e for e in events if isinstance(e, ReconcileFinished)}
    assert begins["inner"].trace_id == begins["outer"].trace_id
    assert begins["inner"].parent_id == begins["outer"].span_id
    assert (ends["outer"].api_calls, ends["inner"].api_calls) == (2, 1)
    await inner.queue.aclose()
    await outer.queue.aclose()


@pytest.mark.parametrize(
    "mult",
    [1, (1 << 63) + 1, ((1 << 64) // 3) | 1, ((1 << 64) // 10) | 1, ((1 << 64) - 1)],
    ids=["one", "half", "third", "tenth", "minus-one"],
)
@pytest.mark.parametrize("ratio", [0.1, 0.5])
def test_the_ratio_holds_over_a_short_run_whatever_the_multiplier(mult: int, ratio: float) -> None:
    """Any odd multiplier new_id_key may draw: over 400 consecutive reconciles (a resync of a
    small controller) the ratio rule keeps about its ratio, not all or none of a run (the
    plain Weyl step kept every reconcile or none with these multipliers)."""
    sampler = TailSampler(ratio, 1.0)
    key = ("0123456789abcdef", mult, 12345)
    n = 400
    kept = sum(sampler.by_ratio(reconcile_ids(key, seq)[0]) for seq in range(1, n + 1))
    assert abs(kept / n - ratio) < 0.1
