"""The LeaderElectionRecord's MicroTimes, read and written as client-go and kube-apiserver do.

A nil ``*MicroTime`` is JSON ``null``; Go marshals a zero MicroTime as ``null`` too, but a
non-Go writer (or an older one) may leave ``0001-01-01T00:00:00Z``. All of these mean "unset",
and an unset time is written as ``null`` — kube-apiserver cannot parse a year-1 string such as
``1-01-01T00:00:00.000000Z`` and refuses the write.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pycm.leaderelection.record import (
    LeaderElectionRecord,
    format_micro_time,
    parse_micro_time,
)

STAMP = "2024-05-01T10:00:00.123456Z"
STAMP_NS = 1_714_557_600_123_456_000

UNSET = [
    pytest.param(None, id="null"),
    pytest.param(..., id="absent"),
    pytest.param("", id="empty"),
    pytest.param("0001-01-01T00:00:00Z", id="go-zero"),
    pytest.param("0001-01-01T00:00:00.000000Z", id="go-zero-micro"),
    pytest.param("0001-01-01T00:00:00.000000000Z", id="go-zero-nano"),
    pytest.param("0001-01-01T00:00:00+00:00", id="go-zero-offset"),
]


def _spec(acquire: Any, renew: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"holderIdentity": "a", "leaseDurationSeconds": 15}
    if acquire is not ...:
        spec["acquireTime"] = acquire
    if renew is not ...:
        spec["renewTime"] = renew
    return spec


@pytest.mark.parametrize("value", UNSET)
def test_parse_micro_time_null_absent_or_go_zero_is_unset(value: Any) -> None:
    record = LeaderElectionRecord.from_lease_spec(_spec(value, value))
    assert (record.acquire_time_ns, record.renew_time_ns) == (0, 0)


@pytest.mark.parametrize("value", UNSET)
def test_record_with_unset_times_writes_null_never_a_year_one_string(value: Any) -> None:
    spec = LeaderElectionRecord.from_lease_spec(_spec(value, value)).to_lease_spec()
    # Present and null: the lock merges this spec over the one it read, so a left-out field
    # would keep the previous writer's value.
    assert spec["acquireTime"] is None
    assert spec["renewTime"] is None
    assert b"1-01-01" not in orjson.dumps(spec)


def test_record_unset_times_written_as_null_read_back_as_unset() -> None:
    record = LeaderElectionRecord("a", 15, 0, 0, 3)
    wire = orjson.loads(orjson.dumps(record.to_lease_spec()))
    assert wire == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": None,
        "renewTime": None,
        "leaseTransitions": 3,
    }
    assert LeaderElectionRecord.from_lease_spec(wire) == record


def test_record_set_times_round_trip_through_json() -> None:
    record = LeaderElectionRecord("a", 15, STAMP_NS, STAMP_NS + 1_000, 1)
    wire = orjson.loads(orjson.dumps(record.to_lease_spec()))
    assert wire["acquireTime"] == STAMP
    assert wire["renewTime"] == "2024-05-01T10:00:00.123457Z"
    assert LeaderElectionRecord.from_lease_spec(wire) == record


@pytest.mark.parametrize(
    ("acquire", "renew"),
    [
        pytest.param(None, "0001-01-01T00:00:00Z", id="null-and-zero"),
        pytest.param(..., "0001-01-01T00:00:00.000000Z", id="absent-and-zero-micro"),
        pytest.param("0001-01-01T00:00:00Z", None, id="zero-and-null"),
    ],
)
def test_record_raw_is_equal_however_the_unset_times_were_spelled(acquire: Any, renew: Any) -> None:
    # The elector compares raw() to notice a change: the same record spelled another way is no
    # change, or a dead holder's lease would look renewed and never expire.
    baseline = LeaderElectionRecord.from_lease_spec(_spec(..., ...)).raw()
    assert LeaderElectionRecord.from_lease_spec(_spec(acquire, renew)).raw() == baseline


@pytest.mark.parametrize(
    ("text", "wall_ns"),
    [
        pytest.param(STAMP, STAMP_NS, id="micro"),
        pytest.param("2024-05-01T10:00:00Z", 1_714_557_600_000_000_000, id="seconds"),
        pytest.param("2024-05-01T12:00:00.123456+02:00", STAMP_NS, id="offset"),
        pytest.param("2024-05-01T10:00:00.123456789Z", STAMP_NS, id="nanos-truncated"),
        pytest.param("1969-12-31T23:59:59.500000Z", -500_000_000, id="before-epoch"),
        pytest.param("yesterday", 0, id="unreadable"),
        pytest.param(12, 0, id="not-a-string"),
    ],
)
def test_parse_micro_time(text: object, wall_ns: int) -> None:
    assert parse_micro_time(text) == wall_ns


@pytest.mark.parametrize(
    ("wall_ns", "text"),
    [
        pytest.param(STAMP_NS, STAMP, id="micro"),
        pytest.param(-500_000_000, "1969-12-31T23:59:59.500000Z", id="before-epoch"),
        pytest.param(0, None, id="unset"),
        pytest.param(-62_135_596_800 * 10**9, None, id="go-zero"),
        pytest.param(-62_135_596_799 * 10**9, "0001-01-01T00:00:01.000000Z", id="four-digit-year"),
    ],
)
def test_format_micro_time(wall_ns: int, text: str | None) -> None:
    assert format_micro_time(wall_ns) == text
