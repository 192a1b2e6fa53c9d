"""SharingDecoder's watched-object tail: an update that leaves an object's spec and status byte
for byte as its last event sent them is decoded from the line's head alone, with the same
results as orjson (managedFields handed on as their bytes); every line that only looks like it
falls back."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from bench.informers import realistic_pod
from pycm.cache.sharing_decoder import SharingDecoder
from pycm.kube import KubeError
from tests.cache.decoded import reduce_managed_fields


def _served(i: int, rv: int = 1) -> dict[str, Any]:
    obj = realistic_pod(i)
    obj["metadata"] |= {"namespace": "default", "uid": f"uid-{i}", "resourceVersion": str(rv)}
    obj["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    return obj


def _bumped(obj: dict[str, Any], n: int) -> dict[str, Any]:
    """``obj`` as the bench's update leaves it: one annotation and the resourceVersion."""
    out = copy.deepcopy(obj)
    out["metadata"]["annotations"]["bench.informers.modify"] = str(n)
    out["metadata"]["resourceVersion"] = str(100 + n)
    return out


def _line(obj: Any, kind: str = "MODIFIED") -> bytes:
    return orjson.dumps({"type": kind, "object": obj})


def _expected(line: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = orjson.loads(line)["object"]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        reduce_managed_fields(meta, watched=True)
    return obj


class _Counting:
    """A msgspec decoder wrapped to count its calls (the usual path's first scan)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def decode(self, data: Any) -> Any:
        self.calls += 1
        return self.inner.decode(data)


def _counted(decoder: SharingDecoder) -> _Counting:
    counting = _Counting(decoder._usual_event)
    decoder._usual_event = counting  # type: ignore[assignment]
    return counting


def test_metadata_only_update_decoded_from_the_head_with_the_last_spec_and_status() -> None:
    decoder = SharingDecoder()
    usual = _counted(decoder)
    lines = [_line(_bumped(_served(3), n)) for n in range(3)]
    (_, a), (_, b), (_, c) = decoder.decode_events(lines)
    assert [a, b, c] == [_expected(line) for line in lines]
    assert usual.calls == 1  # the later two: the head only (the usual path scans the line)
    assert b["spec"] is a["spec"] and c["spec"] is a["spec"]
    assert b["status"] is a["status"]
    assert b["metadata"]["annotations"]["bench.informers.modify"] == "1"
    assert b["metadata"]["labels"] is a["metadata"]["labels"]
    assert list(b) == ["apiVersion", "kind", "metadata", "spec", "status"]


def test_status_change_keeps_the_last_spec_object_and_decodes_the_new_status() -> None:
    decoder = SharingDecoder()
    first = _served(5)
    moved = _bumped(first, 1)
    moved["status"] = {"phase": "Running", "podIP": "10.0.0.5"}
    (_, a), (_, b) = decoder.decode_events([_line(first), _line(moved)])
    assert b == _expected(_line(moved))
    assert b["spec"] is a["spec"]
    assert b["status"] == {"phase": "Running", "podIP": "10.0.0.5"}


def test_spec_change_is_decoded_again_sharing_what_did_not_change() -> None:
    decoder = SharingDecoder()
    first = _served(6)
    changed = _bumped(first, 1)
    changed["spec"]["containers"][0]["image"] = "registry.example.com/team/x:9"
    (_, a), (_, b) = decoder.decode_events([_line(first), _line(changed)])
    assert b == _expected(_line(changed))
    assert b["spec"] is not a["spec"]
    assert b["spec"]["containers"][0]["env"] is a["spec"]["containers"][0]["env"]


def test_same_name_other_object_and_other_types_decode_as_orjson() -> None:
    decoder = SharingDecoder()
    pod = _served(7)
    elsewhere = copy.deepcopy(pod)
    elsewhere["metadata"]["namespace"] = "other"
    elsewhere["spec"]["nodeName"] = "node-2"
    status = {"kind": "Status", "metadata": {"name": "x"}, "status": "Failure"}
    lines = [
        _line(pod, "ADDED"),
        _line(elsewhere, "ADDED"),  # the same name hint, another tail
        _line(_bumped(pod, 1), "DELETED"),
        _line(pod) + b"\n",  # trailing white space: not the tail's end, the usual path
        _line(status, "ERROR"),
        _line(status, "ERROR"),  # a tail seen, still an ERROR's plain Status
    ]
    got = decoder.decode_events(lines)
    assert got == [(orjson.loads(line)["type"], _expected(line)) for line in lines]


def test_lines_ending_with_a_known_tail_but_shaped_otherwise_fall_back() -> None:
    decoder = SharingDecoder()
    pod = _served(8)
    decoder.decode_events([_line(pod)])
    line = _line(pod)
    tail_at = line.index(b',"spec":')
    tail = line[tail_at:]
    head = line[:tail_at]
    name = pod["metadata"]["name"]
    tricks = [
        # The tail belongs to another member of the event: the object has no spec.
        b'{"type":"MODIFIED","object":{"metadata":{"name":"'
        + name.encode()
        + b'"}},"extra":{"a":1'
        + tail,
        # The head already holds a spec (a duplicate key: the last one wins, as in orjson).
        head.replace(b'"metadata":', b'"spec":{"old":1},"metadata":', 1) + tail,
        # The head holds an unusual member: the generic walk.
        head.replace(b'"metadata":', b'"extra":[1,2],"metadata":', 1) + tail,
    ]
    for trick in tricks:
        ((_, obj),) = decoder.decode_events([trick])
        assert obj == _expected(trick)


def test_an_empty_head_before_a_known_tail_is_refused() -> None:
    decoder = SharingDecoder()
    # No metadata: the line's first "name" is a container's, and its tail is remembered.
    obj = {"kind": "Pod", "spec": {"containers": [{"name": "app"}]}, "status": {"phase": "x"}}
    line = _line(obj)
    assert decoder.decode_events([line]) == [("MODIFIED", obj)]
    tail = line[line.index(b',"spec":') :]
    with pytest.raises(KubeError):  # ``{,"spec":...``: not JSON
        decoder.decode_events([b'{"type":"MODIFIED","object":{' + tail])
    # Without the comma it is JSON: the same object again.
    again = b'{"type":"MODIFIED","object":{' + tail[1:]
    assert decoder.decode_events([again]) == [("MODIFIED", _expected(again))]


def test_tails_are_bounded_with_the_table() -> None:
    decoder = SharingDecoder(max_entries=16)
    lines = [_line(_bumped(_served(i), n)) for n in range(2) for i in range(40)]
    got = decoder.decode_events(lines)
    assert [o for _, o in got] == [_expected(line) for line in lines]
    assert len(decoder) <= 32


def test_tails_are_bounded_in_bytes_as_well() -> None:
    """Tails of ~3 KB each against a 16 KB generation: a handful per generation, whatever the
    entry bound; every event still decodes as orjson."""
    decoder = SharingDecoder(max_bytes=16 << 10)
    lines = [_line(_bumped(_served(i), n)) for n in range(2) for i in range(40)]
    got = decoder.decode_events(lines)
    assert [o for _, o in got] == [_expected(line) for line in lines]
    tails = [v[0] for v in (*decoder._new.values(), *decoder._old.values()) if type(v) is tuple]
    assert tails and sum(map(len, tails)) <= 2 * (16 << 10) + max(map(len, tails))
    unbounded = SharingDecoder()
    unbounded.decode_events(lines)
    assert len(unbounded) > 2 * len(decoder)  # (the bound is what held them back)


def test_an_unused_entry_leaves_within_twice_the_age_bound() -> None:
    """Pods made and deleted (or updated once, never again) leave their slices and tails once two
    generations have aged past them; one still updated is promoted and stays."""
    now = [0]
    decoder = SharingDecoder(max_age_s=300.0, monotonic_ns=lambda: now[0])
    once = _line(_bumped(_served(1), 1))
    kept = [_line(_bumped(_served(2), n)) for n in range(4)]
    decoder.decode_events([once, kept[0]])
    name_once = _served(1)["metadata"]["name"].encode()
    name_kept = _served(2)["metadata"]["name"].encode()
    hint_once, hint_kept = b'"name":"' + name_once, b'"name":"' + name_kept
    assert hint_once in decoder._new and hint_kept in decoder._new
    for step, line in enumerate(kept[1:], 1):  # every 301 s: one generation turns old each time
        now[0] = step * 301 * 10**9
        assert decoder.decode_events([line]) == [("MODIFIED", _expected(line))]
    assert hint_once not in decoder._new and hint_once not in decoder._old
    assert hint_kept in decoder._new


def _list_body(items: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": items})


def test_a_listed_objects_first_update_takes_the_head_path_with_the_listed_spec() -> None:
    decoder = SharingDecoder()
    pods = [_served(i) for i in range(3)]
    listed, _ = decoder.decode_list(_list_body(pods))
    usual = _counted(decoder)
    lines = [_line(_bumped(p, 1)) for p in pods]
    got = [o for _, o in decoder.decode_events(lines)]
    assert got == [_expected(line) for line in lines]
    assert usual.calls == 0  # each tail encoded from the listed values matched the line
    for a, b in zip(listed, got, strict=True):
        assert b["spec"] is a["spec"] and b["status"] is a["status"]


def test_a_listed_object_sent_otherwise_formatted_or_changed_decodes_as_orjson() -> None:
    decoder = SharingDecoder()
    pods = [_served(i) for i in range(3)]
    listed, _ = decoder.decode_list(_list_body(pods))
    spaced = _line(_bumped(pods[0], 1)).replace(b'"containers":[', b'"containers": [', 1)
    changed = _bumped(pods[1], 1)
    changed["status"] = {"phase": "Running"}
    escaped = _line(_bumped(pods[2], 1)).replace(b"/", b"\\/")  # the same JSON, other bytes
    lines = [spaced, _line(changed), escaped]
    got = [o for _, o in decoder.decode_events(lines)]
    assert got == [_expected(line) for line in lines]
    assert got[0]["spec"] is not listed[0]["spec"]  # bytes differ: decoded again
    assert got[1]["spec"] is listed[1]["spec"]  # the status changed: the spec still matches


def test_listed_objects_without_a_name_or_a_tail_decode_as_orjson_and_are_not_remembered() -> None:
    decoder = SharingDecoder()
    odd = [
        {"kind": "Pod", "metadata": {"name": 7}, "spec": {"a": 1}, "status": {}},
        {"kind": "Pod", "metadata": {"name": "no-status"}, "spec": {"a": 1}},
        {"kind": "Pod", "spec": {"a": 1}, "status": {}},
    ]
    items, _ = decoder.decode_list(_list_body(odd))
    assert items == odd
    assert len(decoder) == 2  # the slices `{}` (status) and `1` (spec.a) only: no tail entry
    lines = [_line(o) for o in odd]
    assert [o for _, o in decoder.decode_events(lines)] == odd


def test_a_tail_remembered_after_a_new_generation_serves_the_same_batch() -> None:
    # Four entries a generation: the first event's slices start new generations before its
    # tail is remembered; the second event, in the same batch, still finds it.
    decoder = SharingDecoder(max_entries=4)
    usual = _counted(decoder)
    lines = [_line(_bumped(_served(2), n)) for n in range(2)]
    got = decoder.decode_events(lines)
    assert [o for _, o in got] == [_expected(line) for line in lines]
    assert usual.calls == 1
