"""The emulator's collector policy (pycm.sim.heap): full collections freeze their survivors."""

from __future__ import annotations

import asyncio
import gc
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from pycm.sim import command, heap
from pycm.sim.options import EmulatorOptions


@pytest.fixture
def policy() -> Iterator[None]:
    undo = heap.freeze_after_full_collections()
    try:
        yield
    finally:
        undo()
        gc.unfreeze()  # (what this test froze goes back to the collector's oldest generation)


def _tree(n: int) -> list[dict[str, Any]]:
    # Decoded-JSON shaped: dicts and lists of strings and ints, no cycles. Built with the
    # collector off, so no full collection (and freeze) happens before the test's own.
    gc.disable()
    try:
        return [
            {"metadata": {"name": f"p{i}", "labels": {"app": "x"}}, "spec": [i]} for i in range(n)
        ]
    finally:
        gc.enable()


def _tracked_ids() -> set[int]:
    return {id(o) for o in gc.get_objects()}  # every generation but the permanent one


def test_a_full_collection_moves_its_survivors_out_of_the_collectors_scans(policy: None) -> None:
    tree = _tree(20_000)
    assert id(tree[0]["metadata"]) in _tracked_ids()
    before = gc.get_freeze_count()
    gc.collect()
    # Three tracked containers a pod: the pod, its metadata, its spec (a dict of strings only,
    # such as the labels, is not tracked).
    assert gc.get_freeze_count() >= before + 3 * 20_000
    tracked = _tracked_ids()
    assert id(tree[0]["metadata"]) not in tracked
    assert id(tree[-1]["spec"]) not in tracked
    # Frozen objects are still freed by reference counting.
    frozen = gc.get_freeze_count()
    del tree
    assert gc.get_freeze_count() <= frozen - 3 * 20_000


def test_cycles_made_after_a_freeze_are_still_collected(policy: None) -> None:
    gc.collect()
    for _ in range(100):
        cycle: list[Any] = []
        cycle.append(cycle)
    del cycle
    assert gc.collect() >= 100


def test_a_young_collection_freezes_nothing(policy: None) -> None:
    gc.collect()
    before = gc.get_freeze_count()
    tree = _tree(1_000)
    gc.collect(0)
    assert gc.get_freeze_count() == before
    assert id(tree[0]["metadata"]) in _tracked_ids()


def test_installing_twice_installs_once_and_the_undo_removes_it() -> None:
    callbacks = list(gc.callbacks)
    undo = heap.freeze_after_full_collections()
    again = heap.freeze_after_full_collections()
    try:
        assert len(gc.callbacks) == len(callbacks) + 1
    finally:
        undo()
        again()
    assert gc.callbacks == callbacks


@pytest.mark.asyncio
async def test_the_sim_command_freezes_survivors_while_it_serves(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # pycm sim's process is the emulator's own: its collector policy is on while it serves
    # and off once it returned.
    options = EmulatorOptions(port=0, tls=False, kubelet=False)
    serving = asyncio.create_task(command._serve(options))
    try:
        async with asyncio.timeout(30):
            while "pycm sim: serving" not in capsys.readouterr().out:
                await asyncio.sleep(0.05)
        installed = [c for c in gc.callbacks if getattr(c, "__module__", "") == heap.__name__]
        assert len(installed) == 1
    finally:
        if not serving.done():  # (then its signal handlers are installed)
            signal.raise_signal(signal.SIGTERM)  # _serve's own handler: it stops serving
        assert await asyncio.wait_for(serving, 30) == 0
    assert not [c for c in gc.callbacks if getattr(c, "__module__", "") == heap.__name__]
    gc.unfreeze()
