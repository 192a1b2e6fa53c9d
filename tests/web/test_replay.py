"""``pycm dashboard --replay``: reading a recording and playing it into the hub (the player is
:mod:`pycm.trace.replay`'s, shared with the TUI)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from pycm.trace.codec import encode
from pycm.trace.events import Event
from pycm.trace.replay import ReplayPlayer, load_recording
from tests.web.streams import T0, S, added, serving
from web.hub import Hub
from web.live import live_routes


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    "damaged",
    [
        pytest.param(b'{"kind":"queue.add","v":1,"seq":"x","ts":1790000002500000000}', id="seq"),
        pytest.param(b'{"kind":"queue.add","v":1,"seq":3,"ts":"soon"}', id="ts-text"),
        pytest.param(b'{"kind":"queue.add","v":1,"seq":3,"ts":null}', id="ts-null"),
        pytest.param(b'{"kind":"queue.add","v":1,"seq":3,"ts":1,"instance":7}', id="instance"),
        pytest.param(b'{"kind":"queue.add","v":1,"seq":3,"ts":1,"dur_ns":"1ms"}', id="dur"),
    ],
)
def test_replay_line_with_a_malformed_envelope_is_skipped_and_the_rest_plays_to_the_end(
    tmp_path: Path, damaged: bytes
) -> None:
    good = [added(seq, "r1", ts=T0 + seq * S) for seq in range(1, 5)]
    lines = [encode(e) for e in good[:2]] + [damaged] + [encode(e) for e in good[2:]]
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    events, bad = load_recording(str(path))

    assert (events, bad) == (good, 1)
    hub = Hub("replay")
    clock = _Clock()
    player = ReplayPlayer(hub, events, speed=1.0, clock=clock)
    player.tick()
    clock.now += 10
    player.tick()
    assert player.info()["position_ts"] == T0 + 4 * S
    assert [e.seq for e in hub.sources["r1"].recent] == [1, 2, 3, 4]


def test_replay_events_before_a_process_knew_its_identity_are_part_of_its_source() -> None:
    # Two recordings one after the other (cat r1.jsonl r2.jsonl), each starting as a process
    # does: flags and start-up events with no instance, then the replica's own.
    def process(name: str) -> list[Event]:
        return [added(seq, "", ts=T0 + seq * S) for seq in (1, 2)] + [
            added(seq, name, ts=T0 + seq * S) for seq in (3, 4)
        ]

    events = process("r1") + process("r2")
    hub = Hub("replay")
    player = ReplayPlayer(hub, events, speed=1.0, clock=_Clock())
    player.seek(3600)

    assert list(hub.sources) == ["r1", "r2"], "no source for the events without an instance"
    for name in ("r1", "r2"):
        recent = hub.sources[name].recent
        assert [(e.seq, e.instance) for e in recent] == [(1, ""), (2, ""), (3, name), (4, name)]


@pytest.mark.parametrize(
    ("seconds", "position"),
    [
        pytest.param(1e300, T0 + 4 * S, id="far-forward"),
        pytest.param(-1e300, T0 + 1 * S, id="far-back"),
        pytest.param(-2.0, T0 + 2 * S, id="within"),
    ],
)
@pytest.mark.asyncio
async def test_replay_api_seek_far_past_either_end_stops_at_that_end(
    seconds: float, position: int
) -> None:
    hub = Hub("replay")
    player = ReplayPlayer(hub, [added(seq, "r1", ts=T0 + seq * S) for seq in range(1, 5)])
    hub.replay = player  # as web.server wires it
    player.pause()
    player.seek(10)  # at the end
    app = Starlette(routes=live_routes(hub))
    async with serving(app) as base, httpx.AsyncClient(timeout=5) as client:
        answer = await client.post(base + "/api/replay", json={"action": "seek", "value": seconds})
    assert answer.status_code == 204, answer.text
    assert player.info()["position_ts"] == position


def test_replay_play_at_the_end_plays_again_from_the_start() -> None:
    hub = Hub("replay")
    clock = _Clock()
    player = ReplayPlayer(
        hub, [added(seq, "r1", ts=T0 + seq * S) for seq in range(1, 5)], clock=clock
    )
    player.seek(10)
    assert player.info()["playing"] is False, "at the end"

    player.play()
    player.tick()

    assert player.info()["playing"] is True
    assert player.info()["position_ts"] == T0 + 1 * S
    assert [e.seq for e in hub.sources["r1"].recent] == [1]
    clock.now += 1.5
    player.tick()
    assert [e.seq for e in hub.sources["r1"].recent] == [1, 2]


def test_replay_of_recordings_one_after_another_plays_them_side_by_side() -> None:
    # cat r1.jsonl r2.jsonl: r2's events come after all of r1's in the file, but happened
    # between them.
    r1 = [added(seq, "r1", ts=T0 + seq * S) for seq in range(1, 5)]
    r2 = [added(seq, "r2", ts=T0 + seq * S + S // 2) for seq in range(1, 5)]
    hub = Hub("replay")
    clock = _Clock()
    player = ReplayPlayer(hub, r1 + r2, speed=1.0, clock=clock)
    player.tick()
    clock.now += 1.6  # event time T0 + 2.6 s
    player.tick()

    assert [e.seq for e in hub.sources["r1"].recent] == [1, 2]
    assert [e.seq for e in hub.sources["r2"].recent] == [1, 2]
    player.seek(3600)
    assert [e.seq for e in hub.sources["r2"].recent] == [1, 2, 3, 4]
    assert hub.sources["r2"].duplicates == 0
