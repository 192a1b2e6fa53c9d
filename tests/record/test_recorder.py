"""The event recorder: repeats patched, similar events combined, per-object spam limit,
bounded queue, retries — against a fake sink that records every call."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.kube.errors import NotFound
from pycm.record import EventRecorder
from pycm.trace.bus import Bus
from pycm.trace.kinds import EventAction, EventRecorded
from pycm.util.clock import FakeClock


class FakeSink:
    """Records every write; keeps the Events as a server would (a resourceVersion per write)
    and answers with the stored object."""

    def __init__(self) -> None:
        self.actions: list[tuple[str, str, dict[str, Any]]] = []
        self.fail_next = 0
        self.missing: set[str] = set()
        self.stored: dict[str, dict[str, Any]] = {}
        self.rename = ""  # a prefix the server puts on the names of created Events
        self._rv = 0

    def _store(self, event: dict[str, Any], name: str) -> dict[str, Any]:
        self._rv += 1
        meta = {**event["metadata"], "name": name, "resourceVersion": str(self._rv)}
        stored = self.stored[name] = {**event, "metadata": meta}
        return stored

    async def create_event(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("server unavailable")
        self.actions.append(("create", namespace, body))
        return self._store(body, self.rename + body["metadata"]["name"])

    async def patch_event(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        if name in self.missing:
            raise NotFound("not found", code=404)
        self.actions.append(("patch", name, patch))
        return self._store({**self.stored[name], **patch}, name)


def _rs(name: str = "web-abc", uid: str = "u1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "prod", "uid": uid, "resourceVersion": "7"},
    }


def _setup(**kwargs: Any) -> tuple[EventRecorder, FakeSink, FakeClock, Bus]:
    sink, clock, bus = FakeSink(), FakeClock(), Bus()
    recorder = EventRecorder(
        sink, component="replicaset-controller", clock=clock, bus=bus, **kwargs
    )
    return recorder, sink, clock, bus


@pytest.mark.asyncio
async def test_recorder_writes_a_core_v1_event_about_the_object() -> None:
    recorder, sink, _, bus = _setup()
    recorder.event(_rs(), "Normal", "SuccessfulCreate", "Created pod: web-abc-x1")
    await recorder.flush()
    ((verb, namespace, body),) = sink.actions
    assert (verb, namespace) == ("create", "prod")
    assert body["involvedObject"] == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "namespace": "prod",
        "name": "web-abc",
        "uid": "u1",
        "resourceVersion": "7",
    }
    assert (body["reason"], body["type"], body["count"]) == ("SuccessfulCreate", "Normal", 1)
    assert body["source"] == {"component": "replicaset-controller"}
    assert body["metadata"]["name"].startswith("web-abc.")
    (traced,) = [e for e in bus.recent() if isinstance(e, EventRecorded)]
    assert (traced.reason, traced.object_kind, traced.name, traced.action) == (
        "SuccessfulCreate",
        "ReplicaSet",
        "web-abc",
        EventAction.CREATED,
    )
    assert "Created pod" not in str(traced)  # messages stay out of traces


@pytest.mark.asyncio
async def test_identical_repeats_patch_count_and_last_timestamp() -> None:
    recorder, sink, clock, _ = _setup()
    for _ in range(3):
        recorder.event(_rs(), "Warning", "FailedCreate", "quota exceeded")
        await recorder.flush()
        clock.advance(5)
    assert [a[0] for a in sink.actions] == ["create", "patch", "patch"]
    name = sink.actions[0][2]["metadata"]["name"]
    assert [a[1] for a in sink.actions[1:]] == [name, name]
    assert [a[2]["count"] for a in sink.actions[1:]] == [2, 3]
    first_last = sink.actions[0][2]["lastTimestamp"]
    assert sink.actions[2][2]["lastTimestamp"] > first_last


@pytest.mark.asyncio
async def test_ten_similar_events_are_combined() -> None:
    recorder, sink, _, bus = _setup()
    for i in range(11):
        recorder.event(_rs(), "Normal", "SuccessfulDelete", f"Deleted pod: p{i}")
    await recorder.flush()
    verbs = [a[0] for a in sink.actions]
    assert verbs == ["create"] * 10 + ["patch"]
    combined = sink.actions[9][2]
    assert combined["message"] == "(combined from similar events): Deleted pod: p9"
    assert sink.actions[10][2]["count"] == 2
    assert sink.actions[10][2]["message"] == "(combined from similar events): Deleted pod: p10"
    actions = [e.action for e in bus.recent() if isinstance(e, EventRecorded)]
    assert actions.count(EventAction.AGGREGATED) == 2


@pytest.mark.asyncio
async def test_spam_filter_allows_a_burst_of_25_per_object_then_one_per_5_minutes() -> None:
    recorder, sink, clock, bus = _setup()
    for i in range(30):
        recorder.event(_rs(), "Normal", f"Reason{i}", "m")
    recorder.event(_rs("other", "u2"), "Normal", "Reason", "m")
    await recorder.flush()
    assert len(sink.actions) == 26
    filtered = [e for e in bus.recent() if getattr(e, "action", None) is EventAction.SPAM_FILTERED]
    assert len(filtered) == 5
    clock.advance(300)
    recorder.event(_rs(), "Normal", "Later", "m")
    recorder.event(_rs(), "Normal", "TooSoon", "m")
    await recorder.flush()
    assert [a[2]["reason"] for a in sink.actions[26:]] == ["Later"]


@pytest.mark.asyncio
async def test_full_queue_drops_instead_of_blocking() -> None:
    recorder, sink, _, _ = _setup(queue_length=3)
    for i in range(5):
        recorder.event(_rs(), "Normal", f"R{i}", "m")
    assert recorder.pending == 3
    assert recorder.dropped == 2
    await recorder.flush()
    assert [a[2]["reason"] for a in sink.actions] == ["R0", "R1", "R2"]


@pytest.mark.asyncio
async def test_write_is_retried_then_dropped_after_three_failures() -> None:
    recorder, sink, clock, _ = _setup()
    sink.fail_next = 2
    recorder.event(_rs(), "Normal", "Retried", "m")

    import asyncio

    writer = asyncio.create_task(recorder.flush(), name="flush")
    for _ in range(4):
        await asyncio.sleep(0)
        clock.advance(5)
    await writer
    assert [a[2]["reason"] for a in sink.actions] == ["Retried"]
    sink.fail_next = 3
    recorder.event(_rs(), "Normal", "Lost", "m")
    writer = asyncio.create_task(recorder.flush(), name="flush")
    for _ in range(6):
        await asyncio.sleep(0)
        clock.advance(5)
    await writer
    assert recorder.dropped == 1
    assert len(sink.actions) == 1


@pytest.mark.asyncio
async def test_patch_of_a_deleted_event_creates_it_again() -> None:
    recorder, sink, _, _ = _setup()
    recorder.event(_rs(), "Normal", "Again", "m")
    await recorder.flush()
    sink.missing.add(sink.actions[0][2]["metadata"]["name"])
    recorder.event(_rs(), "Normal", "Again", "m")
    await recorder.flush()
    assert [a[0] for a in sink.actions] == ["create", "create"]
    assert sink.actions[1][2]["count"] == 2
    # Written anew without the deleted Event's resourceVersion (client-go's recordEvent).
    assert "resourceVersion" not in sink.actions[1][2]["metadata"]


@pytest.mark.asyncio
async def test_repeats_follow_the_servers_copy_of_the_event() -> None:
    # After each write the correlator takes the server's answer (client-go's UpdateState):
    # the repeats patch the Event by the name the server gave it.
    recorder, sink, clock, _ = _setup()
    sink.rename = "srv-"
    for _ in range(3):
        recorder.event(_rs(), "Warning", "FailedCreate", "quota exceeded")
        await recorder.flush()
        clock.advance(5)
    sent = sink.actions[0][2]["metadata"]["name"]
    assert [(verb, name) for verb, name, _ in sink.actions[1:]] == [("patch", "srv-" + sent)] * 2
    assert sink.stored["srv-" + sent]["count"] == 3
