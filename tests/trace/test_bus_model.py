"""A subscription reads what a plain model of a bounded drop-oldest queue reads, lag notices
included, whichever way it is fed: by the bus appending to its deque (a subscription to every
kind, whose losses are read off the sequence numbers) or through ``_push`` (a filtered one)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from pycm.trace.bus import Bus, Subscription
from pycm.trace.events import Event
from pycm.trace.kinds import ItemAdded, SubscriberLagged

Read = tuple[str, object]  # ("lag", count) or ("event", the event)


@dataclass
class Model:
    """A bounded queue that drops its oldest item and counts the drops until they are read."""

    maxsize: int
    items: deque[Event] = field(default_factory=deque)
    lost: int = 0

    def put(self, event: Event) -> None:
        if len(self.items) == self.maxsize:
            self.items.popleft()
            self.lost += 1
        self.items.append(event)

    def _lag(self) -> list[Read]:
        lost, self.lost = self.lost, 0
        return [("lag", lost)] if lost else []

    def drain(self, limit: int | None) -> list[Read]:
        out = self._lag()
        n = len(self.items) if limit is None else min(limit, len(self.items))
        out += [("event", self.items.popleft()) for _ in range(n)]
        return out

    def get(self) -> list[Read]:
        lag = self._lag()
        if lag:
            return lag
        return [("event", self.items.popleft())] if self.items else [("none", None)]


def _reads(events: list[Event | None]) -> list[Read]:
    out: list[Read] = []
    for e in events:
        if e is None:
            out.append(("none", None))
        elif isinstance(e, SubscriberLagged):
            out.append(("lag", e.lost))
        else:
            out.append(("event", e))
    return out


_ops = st.lists(
    st.one_of(
        st.tuples(st.just("emit"), st.integers(1, 12)),
        st.tuples(st.just("drain"), st.one_of(st.none(), st.integers(0, 5))),
        st.tuples(st.just("get"), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(
    maxsize=st.integers(1, 6),
    filtered=st.booleans(),
    emitted_before=st.integers(0, 5),
    ops=_ops,
)
def test_subscription_reads_what_the_model_reads(
    maxsize: int, filtered: bool, emitted_before: int, ops: list[tuple[str, int | None]]
) -> None:
    bus = Bus()
    for _ in range(emitted_before):  # seqs before the subscription began
        bus.emit(ItemAdded(queue="early"))
    sub: Subscription = bus.subscribe(maxsize=maxsize, kinds=["queue.add"] if filtered else None)
    model = Model(maxsize)
    counter = 0
    for op, arg in ops:
        if op == "emit":
            assert arg is not None
            for _ in range(arg):
                counter += 1
                event = ItemAdded(queue="q", key=str(counter))
                bus.emit(event)
                model.put(event)
        elif op == "drain":
            assert _reads(list(sub.drain(arg))) == model.drain(arg)
        else:
            assert _reads([sub.get_nowait()]) == model.get()
        assert sub.pending == len(model.items)
    assert _reads(list(sub.drain())) == model.drain(None)


@settings(max_examples=200, deadline=None)
@given(
    ring=st.integers(1, 8),
    emitted=st.integers(0, 12),
    since=st.integers(0, 14),
    maxsize=st.integers(1, 6),
)
def test_backfill_counts_what_the_ring_and_the_queue_could_not_hold(
    ring: int, emitted: int, since: int, maxsize: int
) -> None:
    bus = Bus(ring_size=ring)
    events = [ItemAdded(queue="q", key=str(i)) for i in range(emitted)]
    for e in events:
        bus.emit(e)
    sub = bus.subscribe(since=since, maxsize=maxsize)
    wanted = events[since:]  # seq i + 1 for events[i]
    held = wanted[-min(len(wanted), ring, maxsize) :] if wanted else []
    expected: list[Read] = []
    if len(wanted) > len(held):
        expected.append(("lag", len(wanted) - len(held)))
    expected += [("event", e) for e in held]
    assert _reads(list(sub.drain())) == expected
    later = ItemAdded(queue="q", key="later")
    bus.emit(later)
    assert sub.drain() == [later]
