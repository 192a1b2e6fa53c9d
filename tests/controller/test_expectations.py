"""Expectations: raise, lower, observe, expire after five minutes; UID-tracked deletions."""

from __future__ import annotations

from pycm.controller import ControllerExpectations, UIDTrackingExpectations
from pycm.util.clock import FakeClock


def test_no_record_is_satisfied() -> None:
    assert ControllerExpectations(FakeClock()).satisfied("ns/a")


def test_creations_are_satisfied_once_all_are_observed() -> None:
    e = ControllerExpectations(FakeClock())
    e.expect_creations("ns/a", 3)
    for _ in range(2):
        e.creation_observed("ns/a")
        assert not e.satisfied("ns/a")
    e.creation_observed("ns/a")
    assert e.satisfied("ns/a")
    assert e.get("ns/a") == (0, 0)


def test_lower_and_raise_adjust_the_counts() -> None:
    e = ControllerExpectations(FakeClock())
    e.expect_creations("ns/a", 4)
    e.lower("ns/a", add=3)  # three creations skipped after a failed batch
    assert e.get("ns/a") == (1, 0)
    e.raise_("ns/a", delete=2)
    assert e.get("ns/a") == (1, 2)
    e.lower("ns/missing", add=1)  # no record: nothing happens
    assert e.get("ns/missing") is None


def test_expectations_expire_after_five_minutes() -> None:
    clock = FakeClock()
    e = ControllerExpectations(clock)
    e.expect_deletions("ns/a", 2)
    clock.advance(300)
    assert not e.satisfied("ns/a")
    clock.advance(0.001)
    assert e.satisfied("ns/a")


def test_uid_tracked_deletions_count_each_pod_once() -> None:
    e = UIDTrackingExpectations(FakeClock())
    e.expect_deletions_of("ns/a", ["u1", "u2"])
    e.deletion_observed_uid("ns/a", "u1")
    e.deletion_observed_uid("ns/a", "u1")  # an update with deletionTimestamp, then the delete
    e.deletion_observed_uid("ns/a", "other")
    assert not e.satisfied("ns/a")
    assert e.expected_deletions("ns/a") == {"u2"}
    e.deletion_observed_uid("ns/a", "u2")
    assert e.satisfied("ns/a")
    e.delete("ns/a")
    assert e.expected_deletions("ns/a") == set()
    assert len(e) == 0
