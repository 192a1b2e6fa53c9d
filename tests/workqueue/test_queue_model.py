"""Property test: the queue against a simple model over random add / get / done / cancel ops.

Each example runs in its own event loop (hypothesis and function-scoped async fixtures do not
mix); the example checks for leaked tasks itself.
"""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.queue import Queue, ShutDown

ITEMS = ["a", "b", "c", "d"]
OPS = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(ITEMS)),
    st.tuples(st.just("get"), st.none()),
    st.tuples(st.just("done"), st.sampled_from(ITEMS)),
    st.tuples(st.just("park"), st.none()),  # a getter that parks, then is cancelled
    st.tuples(st.just("shutdown"), st.none()),
)


class Model:
    """The spec, spelled as plainly as possible."""

    def __init__(self) -> None:
        self.line: list[str] = []  # waiting, in order
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.shut = False

    def add(self, item: str) -> None:
        if self.shut or item in self.dirty:
            return
        self.dirty.add(item)
        if item not in self.processing:
            self.line.append(item)

    def get(self) -> str | None:
        if not self.line:
            return None
        item = self.line.pop(0)
        self.dirty.discard(item)
        self.processing.add(item)
        return item

    def done(self, item: str) -> None:
        if item not in self.processing:
            return
        self.processing.discard(item)
        if item in self.dirty:
            self.line.append(item)


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def _run(ops: list[tuple[str, str | None]]) -> None:
    clock = FakeClock()
    queue = Queue[str]("model", clock=clock, bus=Bus(clock=clock))
    model = Model()
    for op, arg in ops:
        if op == "add":
            assert arg is not None
            queue.add(arg)
            model.add(arg)
        elif op == "done":
            assert arg is not None
            queue.done(arg)
            model.done(arg)
        elif op == "shutdown":
            queue.shut_down()
            model.shut = True
        elif op == "get":
            expected = model.get()
            getter = asyncio.create_task(queue.get())
            await _settle()
            if expected is not None:
                assert getter.result() == expected
            elif model.shut:
                assert isinstance(getter.exception(), ShutDown)
            else:
                assert not getter.done()
                getter.cancel()
                await _settle()
                assert getter.cancelled()
        else:  # park: a getter waits (if nothing is free), is cancelled, and takes nothing
            if model.line or model.shut:
                continue
            getter = asyncio.create_task(queue.get())
            await _settle()
            assert not getter.done()
            getter.cancel()
            await _settle()
        assert queue.len() == len(model.line)
        assert list(queue._queue) == model.line
        assert set(queue._dirty) == model.dirty
        assert set(queue._processing) == model.processing
        assert queue._reserved == 0
    leaked = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert not leaked


@settings(max_examples=200, deadline=None)
@given(st.lists(OPS, max_size=40))
def test_queue_matches_model_for_any_op_sequence(ops: list[tuple[str, str | None]]) -> None:
    asyncio.run(_run(ops))
