"""The hub: per-source state, dedupe by seq, restarts, batched frames, the 1 Hz sampler."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from pycm.trace import kinds as k
from pycm.trace.events import Outcome
from pycm.trace.state import State
from tests.web.streams import T0, S, added, parse_frames
from web.fanout import Broadcast
from web.hub import DashboardConfig, Hub, event_json, series_sample


def _frames(viewer: Any) -> list[tuple[str, str, Any]]:
    out = []
    while (frame := viewer.take()) is not None:
        out.extend(parse_frames(frame))
    return out


def _applied(hub: Hub, source: str) -> int:
    state = hub.sources[source].state
    assert state is not None
    return state.applied


def test_hub_push_events_at_or_below_last_seq_are_dropped_as_duplicates() -> None:
    hub = Hub("fanin")
    hub.push("r1", [added(1), added(2), added(3)])
    hub.push("r1", [added(2), added(3), added(4)])  # a resume that overlapped
    record = hub.sources["r1"]
    assert (record.last_seq, record.duplicates, _applied(hub, "r1")) == (4, 2, 4)
    assert [e.seq for e in record.recent] == [1, 2, 3, 4]


def test_hub_sources_keep_separate_labelled_states() -> None:
    hub = Hub("fanin")
    hub.push("r1", [added(1, "r1"), added(2, "r1")])
    hub.push("r2", [added(1, "r2")])  # the same seq in another replica is not a duplicate
    snap = hub.state()
    assert [s["name"] for s in snap["sources"]] == ["r1", "r2"]
    r1, r2 = (s["snapshot"] for s in snap["sources"])
    assert list(r1["queues"]) == ["r1"] and list(r2["queues"]) == ["r2"]
    assert r1["queues"]["r1"]["deployment"]["adds"] == 2
    assert r2["queues"]["r2"]["deployment"]["adds"] == 1


def test_hub_reconnect_resuming_after_last_seq_continues_the_same_state() -> None:
    hub = Hub("fanin")
    hub.set_status("r1", "connected")
    hub.push("r1", [added(1), added(2)])
    hub.set_status("r1", "reconnecting")
    hub.set_status("r1", "connected")
    hub.push("r1", [added(3)])
    record = hub.sources["r1"]
    assert (record.restarts, record.last_seq, _applied(hub, "r1")) == (0, 3, 3)


def test_hub_first_event_after_reconnect_at_or_below_last_seq_means_a_restart() -> None:
    hub = Hub("fanin")
    viewer = hub.broadcast.attach()
    hub.set_status("r1", "connected")
    hub.push("r1", [added(1), added(2), added(3)])
    hub.set_status("r1", "reconnecting")
    hub.set_status("r1", "connected")
    hub.push("r1", [added(1), added(2)])  # the new process counts from 1 again
    record = hub.sources["r1"]
    assert (record.restarts, record.last_seq, _applied(hub, "r1")) == (1, 2, 2)
    _frames(viewer)
    hub.flush()
    names = [name for name, _, _ in _frames(viewer)]
    assert names[0] == "hello"  # every page resets to the new process


def test_hub_duplicates_within_a_connection_are_not_a_restart() -> None:
    hub = Hub("fanin")
    hub.set_status("r1", "connected")
    hub.push("r1", [added(1), added(2), added(3)])
    hub.push("r1", [added(3)])
    assert hub.sources["r1"].restarts == 0 and hub.sources["r1"].duplicates == 1


def _snapshot_of(events: list[Any]) -> dict[str, Any]:
    state = State()
    state.apply_all(events)
    return dict(state.snapshot())


def test_hub_first_snapshot_is_adopted_and_events_it_holds_are_not_applied_again() -> None:
    hub = Hub("fanin")
    hub.set_status("r1", "connected")
    hub.push_snapshot("r1", _snapshot_of([added(1), added(2), added(3)]))
    hub.push("r1", [added(2), added(3), added(4)])  # subscribed before the snapshot was taken
    snap = hub.state()["sources"][0]["snapshot"]
    assert snap["queues"]["r1"]["deployment"]["adds"] == 4
    assert hub.sources["r1"].last_seq == 4


def test_hub_snapshot_on_resume_is_ignored_so_the_backfill_is_not_counted_twice() -> None:
    hub = Hub("fanin")
    hub.set_status("r1", "connected")
    hub.push("r1", [added(1), added(2)])
    hub.set_status("r1", "reconnecting")
    hub.set_status("r1", "connected")
    # The server's snapshot already holds 3 and 4, which the resumed stream backfills.
    hub.push_snapshot("r1", _snapshot_of([added(i) for i in (1, 2, 3, 4)]))
    hub.push("r1", [added(3), added(4)])
    snap = hub.state()["sources"][0]["snapshot"]
    assert snap["queues"]["r1"]["deployment"]["adds"] == 4
    assert hub.sources["r1"].restarts == 0


def test_hub_snapshot_behind_last_seq_means_a_restart_and_is_adopted() -> None:
    hub = Hub("fanin")
    hub.set_status("r1", "connected")
    hub.push("r1", [added(i) for i in range(1, 11)])
    hub.set_status("r1", "reconnecting")
    hub.set_status("r1", "connected")
    hub.push_snapshot("r1", _snapshot_of([added(1), added(2)]))
    hub.push("r1", [added(3)])
    record = hub.sources["r1"]
    snap = hub.state()["sources"][0]["snapshot"]
    assert (record.restarts, record.last_seq) == (1, 3)
    assert snap["queues"]["r1"]["deployment"]["adds"] == 3


def test_hub_restart_logs_the_new_process_events_its_adopted_snapshot_holds() -> None:
    # The stream client noticed the restart and read the new run from since=0: its snapshot
    # (holding seqs 1-3), then the ring from seq 1. The state must not count 1-3 twice; the
    # log (and the incidents) must still get them — the new process's start-up.
    hub = Hub("fanin")
    hub.set_status("r1", "connected")
    hub.push("r1", [added(i) for i in range(1, 11)])
    hub.set_status("r1", "reconnecting")
    hub.set_status("r1", "connected")
    acquired = k.LeaseAcquired(lease="kube-system/pycm", identity="r1", seq=2, ts=T0 + S)
    new_run = [added(1, ts=T0 + 1), acquired, added(3, ts=T0 + S + 1), added(4, ts=T0 + S + 2)]
    hub.push_snapshot("r1", _snapshot_of(new_run[:3]))
    hub.push("r1", new_run)
    hub.push("r1", new_run[2:])  # repeated: dropped
    record = hub.sources["r1"]
    snap = hub.state()["sources"][0]["snapshot"]
    assert snap["queues"]["r1"]["deployment"]["adds"] == 3
    assert [e.seq for e in record.recent] == [1, 2, 3, 4]
    assert [i["type"] for i in record.incidents.to_list()] == ["lease"]
    assert (record.restarts, record.last_seq, record.duplicates) == (1, 4, 2)


def test_hub_snapshot_of_a_process_started_after_our_newest_event_is_a_restart() -> None:
    hub = Hub("fanin")
    hub.set_status("r1", "connected")
    hub.push("r1", [added(1), added(2)])
    hub.set_status("r1", "connected")
    # Down long: the new process has seqs above ours but started later than our newest event.
    later = [added(seq, ts=T0 + 3600 * S + seq) for seq in range(1, 6)]
    hub.push_snapshot("r1", _snapshot_of(later))
    assert hub.sources["r1"].restarts == 1 and hub.sources["r1"].last_seq == 5


def test_hub_flush_without_viewers_encodes_nothing() -> None:
    hub = Hub("fanin")
    hub.push("r1", [added(1)])
    assert hub.sources["r1"].pending == []
    hub.flush()
    assert hub.broadcast.published == 0


def test_hub_flush_sends_one_events_frame_per_source_the_same_bytes_to_every_viewer() -> None:
    hub = Hub("fanin")
    a, b = hub.broadcast.attach(), hub.broadcast.attach()
    hub.push("r1", [added(1), added(2)])
    hub.push("r1", [added(3)])
    hub.push("r2", [added(7, "r2")])
    hub.flush()
    frame_a, frame_b = a.take(), b.take()
    assert frame_a is frame_b  # encoded once
    frames = parse_frames(frame_a + a.take())  # type: ignore[operator]
    assert a.take() is None
    (name1, id1, data1), (name2, id2, _) = frames
    assert (name1, id1, name2, id2) == ("events", "r1:3", "events", "r2:7")
    assert [e["seq"] for e in data1["events"]] == [1, 2, 3]
    assert data1["source"] == "r1" and data1["events"][0]["kind"] == "queue.add"
    assert "ns/k1" in data1["events"][0]["line"]


def test_hub_event_json_is_the_codec_object_plus_its_line() -> None:
    event = added(5)
    obj = orjson.loads(event_json(event))
    line = obj.pop("line")
    from pycm.trace.codec import to_dict

    assert obj == to_dict(event)
    assert "queue.add" in line and "key=ns/k5" in line


def test_hub_backfill_gives_a_new_viewer_the_recent_events_in_order() -> None:
    hub = Hub("fanin")
    hub.push("r1", [added(i) for i in range(1, 4)])
    ((name, id_, data),) = parse_frames(b"".join(hub.backfill_frames()))
    assert (name, id_) == ("events", "r1:3")
    assert [e["seq"] for e in data["events"]] == [1, 2, 3]


def test_hub_incident_is_broadcast_as_it_happens() -> None:
    hub = Hub("fanin")
    viewer = hub.broadcast.attach()
    lost = k.LeaseLost(lease="kube-system/pycm", identity="r1", seq=1, ts=T0, instance="r1")
    hub.push("r1", [lost])
    ((name, _, data),) = _frames(viewer)
    assert name == "incident" and data["source"] == "r1"
    assert data["incident"]["type"] == "lease" and "lost" in data["incident"]["text"]
    assert hub.state()["sources"][0]["incidents"] == [data["incident"]]


def test_hub_status_change_is_broadcast_once() -> None:
    hub = Hub("fanin")
    viewer = hub.broadcast.attach()

    @dataclasses.dataclass
    class Status:  # the stream client's SourceStatus shape
        state: Any
        reason: str = ""

    hub.set_status("r1", Status("unauthorized", "HTTP 401"))
    hub.set_status("r1", Status("unauthorized", "HTTP 401"))
    frames = _frames(viewer)
    assert frames == [
        ("status", "", {"source": "r1", "status": {"state": "unauthorized", "reason": "HTTP 401"}})
    ]


def test_hub_sample_appends_a_series_point_and_a_snapshot_frame_while_watched() -> None:
    hub = Hub("fanin", DashboardConfig(jaeger_url="http://j"))
    hub.push("r1", [added(1)])
    hub.sample()
    assert len(hub.sources["r1"].series) == 1  # sampled without viewers: its own process
    assert hub.broadcast.published == 0
    viewer = hub.broadcast.attach()
    hub.sample()  # nothing new since: no frame
    assert viewer.take() is None
    hub.push("r1", [added(2)])
    hub.sample()
    ((name, _, data),) = _frames(viewer)
    assert name == "snapshot" and data["source"] == "r1"
    assert data["sample"]["ts"] == T0 + 2000
    assert data["snapshot"]["queues"]["r1"]["deployment"]["adds"] == 2
    state = hub.state()
    assert state["config"]["jaeger_url"] == "http://j"
    assert [s["ts"] for s in state["sources"][0]["series"]] == [T0 + 1000, T0 + 2000]


def test_hub_source_with_the_managers_state_is_sampled_only_while_watched() -> None:
    calls = []

    def snapshot() -> Mapping[str, Any]:
        calls.append(1)
        return _snapshot_of([added(1)])

    hub = Hub("live")
    hub.add_source("m", snapshot=snapshot)
    hub.push("m", [added(1, "m")])
    hub.sample()
    assert calls == []  # nobody watches: the manager pays no snapshot
    hub.broadcast.attach()
    hub.sample()
    assert calls == [1]


def test_series_sample_reads_controllers_queues_and_informer_rates() -> None:
    events = [
        k.ItemRequeued(queue="deployment", key="a", seq=1, ts=T0, instance="r1"),
        k.ItemAdded(queue="deployment", key="a", depth=4, seq=2, ts=T0, instance="r1"),
        k.ReconcileFinished(
            controller="deployment",
            key="a",
            outcome=Outcome.ERROR,
            dur_ns=5_000_000,
            seq=3,
            ts=T0,
            instance="r1",
        ),
        k.InformerSynced(resource="pods", objects=12, seq=4, ts=T0, instance="r1"),
    ]
    first = series_sample(_snapshot_of(events), T0)
    c = first["controllers"]["r1/deployment"]
    assert (c["depth"], c["errors"], c["retries"]) == (4, 1, 1)
    assert c["p50_ms"] > 0 and c["p99_ms"] >= c["p50_ms"]
    assert first["informers"]["r1/pods"] == {"objects": 12, "events_per_s": 0, "relists": 0}
    # A watch still open: its progress reports make the cache size and the event rate live.
    events += [
        k.WatchOpened(resource="pods", seq=5, ts=T0 + S, instance="r1"),
        k.InformerProgress(
            resource="pods", objects=20, watch_events=30, seq=6, ts=T0 + 3 * S, instance="r1"
        ),
        k.InformerProgress(
            resource="pods", objects=25, watch_events=50, seq=7, ts=T0 + 5 * S, instance="r1"
        ),
    ]
    second = series_sample(_snapshot_of(events), T0 + 5 * S)
    # 50 events in the state's 10 s window of event time.
    assert second["informers"]["r1/pods"] == {"objects": 25, "events_per_s": 5.0, "relists": 0}


def test_series_sample_tolerates_a_malformed_snapshot() -> None:
    sample = series_sample({"controllers": [], "queues": "x", "informers": {"r": 3}}, 1)
    assert sample == {"ts": 1, "controllers": {}, "informers": {}}


def test_hub_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError):
        Hub("other", broadcast=Broadcast())


def test_hub_lag_notice_without_a_seq_is_applied_and_keeps_last_seq() -> None:
    hub = Hub("fanin")
    hub.push("r1", [added(1), added(2)])
    lag = k.SubscriberLagged(subscriber="sse", lost=5, ts=T0, instance="r1")
    hub.push("r1", [lag, added(3)])
    record = hub.sources["r1"]
    assert (record.last_seq, record.duplicates) == (3, 0)
    snap = hub.state()["sources"][0]["snapshot"]
    assert snap["counters"]["lost"] == 5
