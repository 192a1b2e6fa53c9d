"""The building blocks: rate windows and bounded tables."""

from __future__ import annotations

import pytest

from pycm.trace.state.leases import HolderRecord
from pycm.trace.state.record import BoundedTable, RateWindow, text_key
from tests.trace.state.script import (
    T0,
    S,
)


def test_rate_window_old_counts_fall_out_and_late_events_dropped() -> None:
    w = RateWindow()
    for sec in range(100):
        w.add(T0 + sec * S)
    w.add(T0 + 10 * S)  # 90 s old: its slot now holds second 70
    now = T0 + 99 * S
    assert w.total(now, 10) == 10
    assert w.total(now, 60) == 60
    assert w.rate(now, 10) == 1.0
    assert w.total(T0 + 200 * S, 10) == 0


def _table(cap: int) -> BoundedTable[str, HolderRecord]:
    def make(key: str) -> HolderRecord:
        text_key(key)
        return HolderRecord()

    return BoundedTable(cap, make)


def test_bounded_table_full_evicts_least_recently_touched() -> None:
    table = _table(3)
    for stamp, key in enumerate(["a", "b", "c"], 1):
        table.touch(key, stamp)
    table.touch("a", 4)  # a is now the most recent; b the least
    table.touch("d", 5)
    assert sorted(table) == ["a", "c", "d"]
    assert {k: r.touched for k, r in table.items()} == {"a": 4, "c": 3, "d": 5}


def test_bounded_table_bad_key_raises_type_error_and_evicts_nothing() -> None:
    table = _table(2)
    table.touch("a", 1)
    table.touch("b", 2)
    with pytest.raises(TypeError):
        table.touch(7, 3)  # type: ignore[arg-type]
    assert sorted(table) == ["a", "b"]


def test_bounded_table_fill_keeps_the_cap() -> None:
    table = _table(2)
    table.fill((k, HolderRecord(touched=t)) for t, k in enumerate("abc"))
    assert sorted(table) == ["b", "c"]
