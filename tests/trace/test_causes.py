"""pycm.trace.causes: the bounded cause tables and the Trigger a reconcile names as its cause."""

from __future__ import annotations

import pytest

from pycm.trace.causes import (
    RELIST,
    CauseTable,
    Trigger,
    cause_of_record,
    cause_of_span,
    choose_writer,
    writers_from_json,
    writers_of,
)
from pycm.trace.context import reconcile_ids

_KEY = ("0123456789abcdef", 0x9E3779B97F4A7C15 | 1, 12345)
_HEAD = ("pycm-0", _KEY, "", "deployment", "deployments")


def _begin(seq: int, key: str = "default/web") -> tuple[object, ...]:
    return (0, seq, _HEAD, 100, 0, key, 0, 0, None)


def test_cause_of_span_root_reconcile_names_its_ids_controller_and_key_not_the_record() -> None:
    begin = _begin(7)
    cause = cause_of_span([0, begin])
    assert cause is not None and cause is not begin  # (a record's own trigger is not kept)
    trigger = Trigger("ReplicaSet", "8", "add", cause=cause, verb="create")
    assert trigger.ids() == reconcile_ids(_KEY, 7)
    assert trigger.cause_controller_key() == ("deployment", "default/web")


def test_cause_of_span_nested_step_names_its_reconcile_and_a_plain_step_its_ids() -> None:
    begin = _begin(9)
    nested = cause_of_span(("a" * 32, "b" * 16, [2, begin]))
    assert nested is not None and Trigger(cause=nested).ids() == reconcile_ids(_KEY, 9)
    plain = cause_of_span(("c" * 32, "d" * 16))
    assert Trigger(cause=plain).ids() == ("c" * 32, "d" * 16)
    assert Trigger(cause=plain).cause_controller_key() == ("", "")
    assert cause_of_span(None) is None
    assert Trigger(cause=cause_of_record(begin)).ids() == reconcile_ids(_KEY, 9)


def test_trigger_merge_keeps_the_first_and_counts_every_event() -> None:
    a = Trigger("Pod", "1", "add", object="ns/p1")
    b = Trigger("Pod", "2", "update", object="ns/p1", paths="status.phase")
    c = Trigger("Pod", "3", "delete", object="ns/p2")
    merged = a.merge(b).merge(c)
    assert (merged.event, merged.resource_version, merged.object) == ("delete", "3", "ns/p2")
    assert merged.first is a and merged.merged == 3
    assert merged.first.first is None  # one level: no chain grows


def test_cause_table_writes_are_bounded_oldest_first() -> None:
    table = CauseTable(max_writes=4)
    span = [0, _begin(1)]
    for rv in range(5):
        table.note_write("ns", "a", str(rv), "update", span)
    assert table.write_of("ns", "a", "0") is None and table.write_of("ns", "a", "1") is None
    assert [table.write_of("ns", "a", str(rv)) is not None for rv in (2, 3, 4)] == [True] * 3
    for rv in range(5, 100):
        table.note_write("ns", "a", str(rv), "update", span)
        assert len(table) <= 4


def test_cause_table_entries_live_one_to_two_minutes() -> None:
    """Under steady churn the tables hold what the last minutes wrote, not their count bounds:
    an entry lives at least half the age bound and never past it."""
    now = [0]
    table = CauseTable(max_age_s=120.0, monotonic_ns=lambda: now[0])
    span = [0, _begin(1)]
    table.note_write("ns", "a", "1", "update", span)
    table.note_writer("ns", "a", "1", (("kubectl-scale", "Update", "t1", ""),))
    table.note_write("ns", "gone", "", "delete", span)
    now[0] = 59 * 10**9  # younger than half the bound: kept through the next insert
    table.note_write("ns", "b", "2", "update", span)
    assert table.write_of("ns", "a", "1") is not None
    now[0] = 61 * 10**9  # the first generation turns old, still asked
    table.note_write("ns", "c", "3", "update", span)
    table.note_writer("ns", "c", "3", RELIST)
    table.note_write("ns", "other", "", "delete", span)
    assert table.write_of("ns", "a", "1") is not None
    assert table.writer_of("ns", "a", "1") == (("kubectl-scale", "Update", "t1", ""),)
    assert table.delete_of("ns", "gone") is not None
    now[0] = 122 * 10**9  # past the bound: dropped at the next insert of each table
    table.note_write("ns", "d", "4", "update", span)
    table.note_writer("ns", "d", "4", RELIST)
    table.note_write("ns", "later", "", "delete", span)
    assert table.write_of("ns", "a", "1") is None
    assert table.writer_of("ns", "a", "1") is None
    assert table.delete_of("ns", "gone") is None
    assert table.write_of("ns", "c", "3") is not None and table.writer_of("ns", "c", "3") is RELIST
    # writes c and d (b went with a's generation), writers c and d, deletes other and later
    assert len(table) == 6


def test_cause_table_a_write_outside_any_step_is_not_noted() -> None:
    table = CauseTable()
    table.note_write("ns", "a", "5", "create", None)
    assert table.write_of("ns", "a", "5") is None and len(table) == 0


def test_cause_table_a_delete_is_matched_by_name_as_well() -> None:
    table = CauseTable()
    table.note_write("ns", "a", "", "delete", [0, _begin(3)])
    found = table.delete_of("ns", "a")
    assert found is not None and found[1] == "delete"
    assert table.delete_of("ns", "b") is None


def test_cause_table_writers_bounded_and_relist_marker_kept() -> None:
    table = CauseTable(max_writers=2)
    table.note_writer("ns", "a", "1", (("kubectl-scale", "Update", "t1", ""),))
    table.note_writer("ns", "a", "2", RELIST)
    table.note_writer("ns", "a", "3", (("kubelet", "Update", "t3", ""),))
    assert table.writer_of("ns", "a", "1") is None
    assert table.writer_of("ns", "a", "2") is RELIST
    assert table.writer_of("ns", "a", "3") == (("kubelet", "Update", "t3", ""),)


def test_writers_of_reads_each_entry_without_its_fields() -> None:
    meta = {
        "managedFields": [
            {
                "manager": "kubectl-create",
                "operation": "Update",
                "time": "t2",
                "fieldsV1": {"f:spec": {}},
            },
            {"manager": "kubelet", "operation": "Update", "time": "t5", "subresource": "status"},
            "junk",
        ]
    }
    assert writers_of(meta) == (
        ("kubectl-create", "Update", "t2", ""),
        ("kubelet", "Update", "t5", "status"),
    )
    assert writers_of({}) is None
    assert writers_of({"managedFields": "junk"}) is None
    assert writers_of({"managedFields": [1, None]}) is None


_ENTRIES = (
    ("kubectl-create", "Update", "2026-01-01T00:00:02Z", ""),
    ("pycm", "Update", "2026-01-01T00:00:05Z", "status"),
    ("kubectl-scale", "Update", "2026-01-01T00:00:05Z", "scale"),
    ("kubelet", "Update", "2026-01-01T00:00:05Z", "status"),
)


@pytest.mark.parametrize(
    ("paths", "own", "expected"),
    [
        pytest.param("spec.replicas", {"pycm"}, "kubectl-scale", id="spec-not-status-not-own"),
        pytest.param("status.phase", {"pycm"}, "kubelet", id="status-by-the-status-entry"),
        pytest.param("status.phase", set(), "kubelet", id="a-tie-the-later"),
        pytest.param("", {"pycm"}, "kubelet", id="no-paths-newest-not-own"),
        pytest.param(
            "spec.replicas",
            {"pycm", "kubectl-scale", "kubelet", "kubectl-create"},
            "kubectl-scale",
            id="all-own-still-one",
        ),
    ],
)
def test_choose_writer_picks_the_entry_that_wrote_the_event(
    paths: str, own: set[str], expected: str
) -> None:
    assert choose_writer(_ENTRIES, paths, own)[0] == expected


def test_writers_noted_as_json_bytes_are_decoded_when_first_asked() -> None:
    table = CauseTable()
    raw = (
        b'[{"manager":"kubectl-scale","operation":"Update","time":"t5","subresource":"scale",'
        b'"fieldsV1":{"f:spec":{"f:replicas":{}}}}]'
    )
    table.note_writer("ns", "a", "5", raw)
    assert table.writer_of("ns", "a", "5") == (("kubectl-scale", "Update", "t5", "scale"),)
    assert table.writer_of("ns", "a", "5") == (("kubectl-scale", "Update", "t5", "scale"),)
    table.note_writer("ns", "a", "6", b'{"not": "a list"}')
    assert table.writer_of("ns", "a", "6") is None
    assert writers_from_json(b"[") is None


def test_note_writers_takes_bytes_and_never_caches_them() -> None:
    from pycm.cache.shared_informer import note_writers

    table = CauseTable()
    keep_all = note_writers(table, None)  # (no transform: managedFields would stay)
    obj = {
        "metadata": {
            "namespace": "ns",
            "name": "a",
            "resourceVersion": "7",
            "managedFields": b'[{"manager":"kubelet","time":"t"}]',
        }
    }
    assert "managedFields" not in keep_all(obj)["metadata"]
    assert table.writer_of("ns", "a", "7") == (("kubelet", "", "t", ""),)
