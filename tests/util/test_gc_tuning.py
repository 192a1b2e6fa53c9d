"""pycm.util.gc_tuning: the collector paused (counted, restored on error), survivors frozen,
the young threshold only raised."""

from __future__ import annotations

import gc

import pytest

from pycm.util import gc_tuning


def test_gc_paused_nested_restores_collector_once_outermost_ends() -> None:
    assert gc.isenabled()
    with gc_tuning.gc_paused():
        with gc_tuning.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_gc_paused_error_still_restores_collector() -> None:
    with pytest.raises(ValueError), gc_tuning.gc_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_gc_freeze_survivors_moves_objects_to_permanent_generation() -> None:
    try:
        gc_tuning.freeze_survivors()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0


def test_gc_tune_thresholds_raises_never_lowers() -> None:
    before = gc.get_threshold()
    try:
        assert gc_tuning.tune_thresholds(before[0] + 1000) == before
        assert gc.get_threshold()[0] == before[0] + 1000
        gc_tuning.tune_thresholds(10)
        assert gc.get_threshold()[0] == before[0] + 1000
    finally:
        gc.set_threshold(*before)
