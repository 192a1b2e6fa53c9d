"""Property test: the priority queue against a plain model over random add (with a priority, or
None) / get / done / shutdown ops — hand-out order, promotion, the dirty and processing sets,
the depth by priority, and the priority a held key is re-added with."""

from __future__ import annotations

import asyncio
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.priority_queue import PriorityQueue
from pycm.workqueue.queue import ShutDown

ITEMS = ["a", "b", "c", "d"]
PRIORITIES = [None, -100, 0, 1]
OPS = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(ITEMS), st.sampled_from(PRIORITIES)),
    st.tuples(st.just("get"), st.none(), st.none()),
    st.tuples(st.just("done"), st.sampled_from(ITEMS), st.none()),
    st.tuples(st.just("shutdown"), st.none(), st.none()),
)


class Model:
    """The spec, spelled as plainly as possible."""

    def __init__(self) -> None:
        self.ready: dict[str, tuple[int, int]] = {}  # item -> (priority, place in line)
        self.dirty: dict[str, int] = {}  # item -> priority
        self.taken: dict[str, int] = {}  # processing item -> priority it was taken with
        self.places = 0
        self.shut = False

    def add(self, item: str, priority: int | None) -> None:
        if self.shut:
            return
        if priority is None:
            priority = self.taken.get(item, 0)
        if item in self.dirty:
            if priority > self.dirty[item]:
                self.dirty[item] = priority
                if item in self.ready:
                    self.ready[item] = (priority, self.ready[item][1])
            return
        self.dirty[item] = priority
        if item not in self.taken:
            self.places += 1
            self.ready[item] = (priority, self.places)

    def order(self) -> list[str]:
        return sorted(self.ready, key=lambda i: (-self.ready[i][0], self.ready[i][1]))

    def get(self) -> str | None:
        if not self.ready:
            return None
        item = self.order()[0]
        del self.ready[item]
        self.taken[item] = self.dirty.pop(item)
        return item

    def done(self, item: str) -> None:
        if item not in self.taken:
            return
        del self.taken[item]
        if item in self.dirty:
            self.places += 1
            self.ready[item] = (self.dirty[item], self.places)


async def _run(ops: list[tuple[str, str | None, int | None]]) -> None:
    clock = FakeClock()
    queue = PriorityQueue[str]("model", clock=clock, bus=Bus(clock=clock))
    model = Model()
    for op, item, priority in ops:
        if op == "add":
            assert item is not None
            queue.add(item, priority=priority)
            model.add(item, priority)
        elif op == "done":
            assert item is not None
            queue.done(item)
            model.done(item)
        elif op == "shutdown":
            queue.shut_down()
            model.shut = True
        else:
            expected = model.get()
            getter = asyncio.create_task(queue.get())
            for _ in range(5):
                await asyncio.sleep(0)
            if expected is not None:
                assert getter.result() == expected
            elif model.shut:
                assert isinstance(getter.exception(), ShutDown)
            else:
                assert not getter.done()
                getter.cancel()
                await asyncio.gather(getter, return_exceptions=True)
        assert queue.ready_in_order() == model.order()
        assert dict(queue.priorities()) == model.dirty
        assert set(queue.processing_items()) == set(model.taken)
        assert dict(queue.depth_by_priority()) == dict(Counter(model.dirty.values()))
        assert queue.len() == len(model.ready)


@settings(max_examples=200, deadline=None)
@given(st.lists(OPS, max_size=40))
def test_priority_queue_matches_model_for_any_op_sequence(
    ops: list[tuple[str, str | None, int | None]],
) -> None:
    asyncio.run(_run(ops))
