"""The views, pilot-driven, fed the scripted scenario (tests/tui/scenario.py)."""

from __future__ import annotations

import pytest

from pycm.trace import UnknownEvent
from pycm.trace import kinds as k
from tests.tui import scenario
from tests.tui.conftest import settle, table_rows, table_text, text_of
from tui.app import TopApp
from tui.sources import ListSource

SIZE = (160, 50)


def app_with(events: list) -> TopApp:  # type: ignore[type-arg]
    return TopApp([ListSource(events)])


@pytest.mark.asyncio
async def test_overview_after_leader_change_shows_roles_gauge_and_queues() -> None:
    app = app_with(scenario.build())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        replicas = text_of(app, "#overview-replicas")
        lines = {
            line.split()[0]: line
            for line in replicas.splitlines()
            if line.strip().startswith("pycm")
        }
        assert "standby" in lines["pycm-a"] and "holder pycm-b" in lines["pycm-a"]
        assert "leader" in lines["pycm-b"]
        # pycm-b renewed at now_ts: 0.0 s since, against 10 s renew deadline and 15 s lease
        assert "0.0s / 10s renew / 15s lease" in lines["pycm-b"]
        assert " 5 " in lines["pycm-b"]  # transitions
        assert "2/2" in lines["pycm-b"] and "2/2" in lines["pycm-a"]  # informers synced
        controllers = text_of(app, "#overview-controllers")
        row = next(line for line in controllers.splitlines() if "deployment" in line)
        cells = row.split()
        # replica controller depth adds/s syncs/s p50 p99 errors retries in-flight longest
        assert cells[:3] == ["pycm-b", "deployment", "0"]
        assert cells[6] == "2.5s"  # p99: the slow reconcile
        assert cells[7] == "1"  # errors
        assert cells[8] == "1"  # queue retries


@pytest.mark.asyncio
async def test_overview_queue_building_up_shows_depth() -> None:
    events = [e for e in scenario.build() if not isinstance(e, k.ItemTaken | k.ItemDone)]
    app = app_with(events)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        row = next(
            line
            for line in text_of(app, "#overview-controllers").splitlines()
            if "deployment" in line
        )
        assert row.split()[2] == "40"


@pytest.mark.asyncio
async def test_leader_view_shows_failures_skew_timeline_and_flap_alert() -> None:
    events = scenario.build()
    app = app_with(events)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        summary = text_of(app, "#lease-summary")
        assert "holder pycm-b" in summary and "transitions 5" in summary
        assert "FLAPPING" not in summary  # 2 changes in the hour: under the threshold
        timeline = [line for line in summary.splitlines() if line.startswith("pycm-")]
        assert [line.split()[0] for line in timeline] == ["pycm-a", "pycm-b"]
        a_cells, b_cells = timeline[0].split()[1], timeline[1].split()[1]
        assert a_cells.startswith("█") and a_cells.endswith("·")
        assert b_cells.startswith("·") and b_cells.endswith("█")
        details = text_of(app, "#lease-details")
        assert "api_error" in details and "timeout" in details
        assert "skew +12ms" in details
        sparkline = app.screen.query_one("#renew-sparkline")
        assert list(sparkline.data)[-1] == 4.0  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_leader_view_flap_alert_when_changes_exceed_threshold() -> None:
    s = scenario.Script()
    for i in range(6):
        holder = scenario.A if i % 2 == 0 else scenario.B
        s.add(
            k.LeaseAcquired(lease=scenario.LEASE, identity=holder, transitions=i),
            scenario.T0 + i * 60 * scenario.S,
            holder,
        )
    app = app_with(s.events)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert "FLAPPING: 6 holder changes" in text_of(app, "#lease-summary")


@pytest.mark.asyncio
async def test_controllers_sort_and_drill_into_slowest_and_failing_keys() -> None:
    app = app_with(scenario.build())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        rows = table_rows(app, "#controllers-table")
        assert rows[0][:4] == ["pycm-b", "deployment", "43", "4.3/s"] or rows[0][:3] == [
            "pycm-b",
            "deployment",
            "43",
        ]
        await pilot.press("enter")
        await settle(pilot)
        keys = table_text(app, "#keys")
        slow = keys.split("slowest keys")[1].split("failing keys")[0].splitlines()
        key_lines = [line for line in slow if line.strip().startswith("default/")]
        assert key_lines[0].split()[:2] == ["default/slow-1", "2.5s"]
        assert key_lines[1].split()[:2] == ["default/slow-2", "1.2s"]
        failing = keys.split("failing keys")[1]
        assert "default/broken" in failing and "conflict on update" in failing
        trace_id = next(
            e.trace_id
            for e in scenario.build()
            if isinstance(e, k.ReconcileFinished) and e.key == "default/broken"
        )
        assert trace_id in failing
        await pilot.press("c")
        assert app.clipboard == trace_id
        await pilot.press("escape")
        assert len(app.screen_stack) == 1


@pytest.mark.asyncio
async def test_controllers_filter_hides_other_controllers() -> None:
    events = scenario.build()
    s = scenario.Script()
    s.step(
        k.ReconcileStarted(controller="replicaset", key="default/x"),
        k.ReconcileFinished(controller="replicaset", key="default/x"),
        scenario.T0 + 59 * scenario.S,
        scenario.MS,
        scenario.A,
    )
    app = app_with(events + s.events)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        assert len(table_rows(app, "#controllers-table")) == 2
        await pilot.press("slash", *"replica")
        await settle(pilot)
        rows = table_rows(app, "#controllers-table")
        assert [r[1] for r in rows] == ["replicaset"]
        await pilot.press("escape")
        await settle(pilot)
        assert len(table_rows(app, "#controllers-table")) == 2


async def informer_rows(events: list) -> dict[tuple[str, str], list[str]]:  # type: ignore[type-arg]
    """The Informers view's rows after ``events``, by (replica, resource)."""
    app = app_with(events)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        return {(r[0], r[1]): r for r in table_rows(app, "#informers-table")}


@pytest.mark.asyncio
async def test_informers_view_shows_relist_and_last_error() -> None:
    rows = await informer_rows(scenario.build())
    pods = rows[("pycm-b", "pods")]
    # replica resource synced objects events/s backlog RV lists relists opens backoffs error
    assert pods[2] == "yes" and pods[3] == "125" and pods[6] == "1342"
    assert pods[7] == "1" and pods[8] == "1" and pods[11] == "stream reset"
    assert rows[("pycm-a", "pods")][8] == "0"


@pytest.mark.asyncio
async def test_informers_view_is_live_while_the_watch_is_open() -> None:
    """The cache size, the watch's rate and the backlog come from the progress reports, not
    from the last list and the watch's close (5 to 10 minutes apart)."""
    s = scenario.Script()
    for at, objects, watch_events, pending in ((66, 140, 30, 7), (68, 150, 60, 0)):
        s.add(
            k.InformerProgress(
                resource="pods",
                objects=objects,
                watch_events=watch_events,
                pending=pending,
                resource_version=str(1342 + watch_events),
            ),
            scenario.T0 + at * scenario.S,
            scenario.B,
        )
    pods = (await informer_rows(scenario.build() + s.events))[("pycm-b", "pods")]
    # 60 events of the open watch in the 10 s of event time before the last report (the
    # closed watch's 300, counted at its close 13 s before, are out of that window).
    assert (pods[3], pods[4], pods[5], pods[6]) == ("150", "6.0", "0", "1402")


@pytest.mark.asyncio
async def test_startup_view_shows_waterfall_durations() -> None:
    app = app_with(scenario.build())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        text = text_of(app, "#waterfall").split("pycm-b")[0]  # pycm-a's waterfall
        lines = {line.split()[0]: line.split() for line in text.splitlines() if line.strip()}
        assert lines["startup"][1:3] == ["0.00ms", "400ms"]
        assert lines["informer.list/pods"][1:3] == ["200ms", "150ms"]
        assert lines["lease.acquired"][2] == "100ms"


@pytest.mark.asyncio
async def test_events_view_filter_select_and_copy_trace_id() -> None:
    events = scenario.build()
    app = app_with(events)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        assert len(table_rows(app, "#events-table")) == 259 if len(events) < 300 else 300
        await pilot.press("slash", *"kind:lease.renew_failed", "enter")
        await settle(pilot)
        rows = table_rows(app, "#events-table")
        assert [r[2] for r in rows] == ["lease.renew_failed"] * 2
        await pilot.press("f")  # hold
        table = app.screen.query_one("#events-table")
        table.move_cursor(row=0)  # type: ignore[attr-defined]
        await pilot.pause()
        detail = text_of(app, "#event-detail")
        assert "reason: api_error" in detail and "latency_ms: 300.0" in detail
        await pilot.press("escape")
        await pilot.press("slash", *"key:default/broken", "enter")
        await settle(pilot)
        rows = table_rows(app, "#events-table")
        assert [r[2] for r in rows] == ["reconcile.begin", "reconcile.end", "queue.retry"]
        table.move_cursor(row=1)  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.press("c")
        broken = next(
            e for e in events if isinstance(e, k.ReconcileFinished) and e.key == "default/broken"
        )
        assert broken.trace_id and app.clipboard == broken.trace_id


@pytest.mark.asyncio
async def test_unknown_kinds_and_lag_events_are_counted_not_fatal() -> None:
    events = [
        *scenario.build(),
        UnknownEvent(
            kind="future.thing", raw='{"x": 1}', ts=scenario.NOW, seq=999, instance=scenario.B
        ),
        k.SubscriberLagged(subscriber="sse", lost=17, ts=scenario.NOW, instance=scenario.B),
    ]
    app = app_with(events)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "unknown kinds 1" in text_of(app, "#overview-controllers")
        assert "lost 17" in text_of(app, "#overview-controllers")
        assert "17 lost upstream" in text_of(app, "#status")
        await pilot.press("6")
        await settle(pilot)
        kinds = [r[2] for r in table_rows(app, "#events-table")]
        assert "future.thing" in kinds and "bus.lagged" in kinds


@pytest.mark.asyncio
async def test_keys_tab_help_and_pause() -> None:
    app = app_with(scenario.build())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab")
        assert app.query_one("#tabs").active == "leader"  # type: ignore[attr-defined]
        await pilot.press("shift+tab", "shift+tab")
        assert app.query_one("#tabs").active == "events"  # type: ignore[attr-defined]
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        assert type(app.screen).__name__ != "HelpScreen"
        await pilot.press("p")
        assert app.paused
        frames = app.frames
        app.feed.push(
            None,
            [
                k.LeaseRenewed(
                    lease=scenario.LEASE,
                    identity="pycm-b",
                    ts=scenario.NOW + 1,
                    seq=10_000,
                    instance="pycm-b",
                )
            ],
        )
        app.flush()
        assert app.frames == frames  # paused: absorbed but not shown
        assert app.feed.state.applied == len(scenario.build()) + 1
        assert "PAUSED" in text_of(app, "#status")
        await pilot.press("p")
        assert not app.paused and app.frames == frames + 1


@pytest.mark.asyncio
async def test_controllers_sort_by_clicked_header_and_s_key() -> None:
    s = scenario.Script()
    for name, n in (("alpha", 1), ("beta", 3), ("gamma", 2)):
        for i in range(n):
            s.step(
                k.ReconcileStarted(controller=name, key=f"default/{i}"),
                k.ReconcileFinished(controller=name, key=f"default/{i}"),
                scenario.T0 + i * scenario.S,
                scenario.MS,
                scenario.A,
            )
    app = app_with(s.events)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        names = lambda: [r[1] for r in table_rows(app, "#controllers-table")]  # noqa: E731
        assert names() == ["alpha", "beta", "gamma"]
        table = app.screen.query_one("#controllers-table")
        table.sort_by(2)  # type: ignore[attr-defined]  # what a header click calls
        await settle(pilot)
        assert names() == ["beta", "gamma", "alpha"]  # reconciles, most first
        table.sort_by(2)  # type: ignore[attr-defined]  # again: reversed
        await settle(pilot)
        assert names() == ["alpha", "gamma", "beta"]
        await pilot.press("s")  # next column (syncs/s)
        await settle(pilot)
        assert table.sort_column == 3  # type: ignore[attr-defined]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("configured", "gauge", "note"),
    [
        pytest.param(
            k.LeaderElectionConfigured(
                lease=scenario.LEASE,
                identity=scenario.A,
                lease_duration_s=8.0,
                renew_deadline_s=4.0,
                retry_period_s=1.0,
            ),
            "3.0s / 4s renew / 8s lease",
            False,
            id="timings-in-the-trace",
        ),
        pytest.param(
            None, "3.0s / 10s* renew / 15s* lease", True, id="older-recording-kube-defaults"
        ),
    ],
)
async def test_lease_gauge_reads_the_electors_timings_from_the_trace_else_says_it_assumes_kubes(
    configured: k.LeaderElectionConfigured | None, gauge: str, note: bool
) -> None:
    s = scenario.Script()
    if configured is not None:
        s.add(configured, scenario.T0, scenario.A)
    s.add(k.LeaseAcquired(lease=scenario.LEASE, identity=scenario.A), scenario.T0, scenario.A)
    s.add(
        k.LeaseRenewed(lease=scenario.LEASE, identity=scenario.A, latency_ms=2.0),
        scenario.T0 + 2 * scenario.S,
        scenario.A,
    )
    s.add(
        k.ItemAdded(queue="deployment", key="default/x", depth=1),
        scenario.T0 + 5 * scenario.S,
        scenario.A,
    )
    app = TopApp([ListSource(s.events)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        replicas = text_of(app, "#overview-replicas")
        row = next(line for line in replicas.splitlines() if line.strip().startswith("pycm-a"))
        assert gauge in row  # * marks a timing assumed, not read from the trace
        assert ("* Kubernetes' default: the trace does not say" in replicas) is note
        await pilot.press("2")  # the leader view: the same gauge, the same note
        await settle(pilot)
        summary = text_of(app, "#lease-summary")
        assert gauge in summary
        assert ("* Kubernetes' default: the trace does not say" in summary) is note


@pytest.mark.asyncio
async def test_mouse_click_on_a_tab_and_a_controller_row() -> None:
    app = app_with(scenario.build())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.click("#--content-tab-controllers")
        await settle(pilot)
        assert app.query_one("#tabs").active == "controllers"  # type: ignore[attr-defined]
        # a click on the row under the cursor selects it: drill in
        await pilot.click("#controllers-table", offset=(5, 1))
        await settle(pilot)
        assert type(app.screen).__name__ == "ControllerScreen"


@pytest.mark.asyncio
async def test_a_refresh_tick_while_the_app_shuts_down_is_not_an_error() -> None:
    # Quitting removes the screens' widgets before it stops the app's timers: a refresh tick
    # can land between the two (seen as NoMatches for StatusLine in tests/tui/test_demo_e2e.py).
    frames_at_tick: list[int] = []

    class Quitting(TopApp):
        async def _close_all(self) -> None:
            await super()._close_all()  # the screens and their widgets are gone ...
            frames_at_tick.append(self.frames)
            self.flush(force=True)  # ... and the refresh timer ticks

    app = Quitting([ListSource(scenario.build())])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
    assert frames_at_tick and app.frames == frames_at_tick[0]  # the tick showed nothing
