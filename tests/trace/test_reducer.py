"""Tests for pycm.trace.reducer: scripted sequences give exact snapshot values; any interleaving
leaves a consistent snapshot; snapshot/restore continues exactly; memory stays bounded."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycm.trace import kinds as k
from pycm.trace.codec import UnknownEvent, decode, encode
from pycm.trace.events import Event, Outcome
from pycm.trace.records import FAILING_KEYS, SLOWEST_KEYS
from pycm.trace.reducer import MAX_ERRORS, MAX_IN_FLIGHT, MAX_TABLE, State

T0 = 1_700_000_000_000_000_000
S = 1_000_000_000  # one second in ns
LEASE = "kube-system/pycm"


class Feed:
    """Stamps events the way a bus would (seq per instance, ts from a script) and applies them."""

    def __init__(self, state: State | None = None) -> None:
        self.state = state or State()
        self.seq: dict[str, int] = {}
        self.spans = (f"{i:016x}" for i in itertools.count(1))

    def __call__(self, event: Event, *, at: float, instance: str = "a", **env: Any) -> Event:
        seq = self.seq[instance] = self.seq.get(instance, 0) + 1
        object.__setattr__(event, "seq", env.pop("seq", seq))
        object.__setattr__(event, "ts", T0 + int(at * S))
        object.__setattr__(event, "instance", instance)
        for name, value in env.items():
            object.__setattr__(event, name, value)
        self.state.apply(event)
        return event

    def span(self) -> str:
        return next(self.spans)


def errors_of(snap: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e["instance"], e["kind"], e["text"]) for e in snap["errors"]]


# ---------------------------------------------------------------------------------------------
# Leases and roles
# ---------------------------------------------------------------------------------------------


def test_lease_leader_change_two_instances_transitions_history_and_roles() -> None:
    f = Feed()
    f(k.LeaseAcquireAttempted(lease=LEASE, identity="a", result=k.AcquireResult.CREATED), at=0)
    f(k.LeaseAcquired(lease=LEASE, identity="a", transitions=0, waited_ms=5.0), at=0)
    f(
        k.LeaseAcquireAttempted(
            lease=LEASE, identity="b", result=k.AcquireResult.HELD_BY_OTHER, holder="a"
        ),
        at=1,
        instance="b",
    )
    f(k.LeaseRenewed(lease=LEASE, identity="a", latency_ms=4.0), at=2)
    f(k.LeaseLost(lease=LEASE, identity="a", reason="renew deadline"), at=12)
    f(
        k.LeaseAcquired(lease=LEASE, identity="b", transitions=1, waited_ms=13000.0),
        at=15,
        instance="b",
    )
    f(
        k.LeaderObserved(
            lease=LEASE,
            old_holder="a",
            new_holder="b",
            transitions=1,
            lease_duration_s=15.0,
            skew_ms=-3.5,
        ),
        at=15.5,
    )
    snap = f.state.snapshot()
    lease = snap["leases"][LEASE]
    assert (lease["holder"], lease["transitions"], lease["changes"]) == ("b", 1, 2)
    assert (lease["acquired"], lease["lost"], lease["lease_duration_s"]) == (2, 1, 15.0)
    assert (lease["skew_ms"], lease["max_abs_skew_ms"]) == (-3.5, 3.5)
    assert lease["attempts"] == {"created": 1, "held_by_other": 1}
    assert [(h["old"], h["new"], h["observer"], h["ts"]) for h in lease["history"]] == [
        ("", "a", "a", T0),
        ("a", "b", "b", T0 + 15 * S),
    ]
    assert lease["changes_last_hour"] == 2
    assert snap["instances"]["a"]["role"] == "standby"
    assert snap["instances"]["b"]["role"] == "leader"
    assert errors_of(snap) == [("a", "lease.lost", f"lost {LEASE}: renew deadline")]


def test_lease_holder_change_seen_by_observer_demotes_silent_old_leader() -> None:
    f = Feed()
    f(k.LeaseAcquired(lease=LEASE, identity="a"), at=0)
    f(k.LeaseAcquireAttempted(lease=LEASE, identity="b", holder="a"), at=1, instance="b")
    # a crashes without a word; b takes over
    f(k.LeaseAcquired(lease=LEASE, identity="b", transitions=1), at=20, instance="b")
    roles = {n: i["role"] for n, i in f.state.snapshot()["instances"].items()}
    assert roles == {"a": "standby", "b": "leader"}


def test_lease_renew_failures_counted_by_reason_and_holder() -> None:
    f = Feed()
    f(k.LeaseAcquired(lease=LEASE, identity="a"), at=0)
    reasons = [
        k.RenewFailureReason.CONFLICT,
        k.RenewFailureReason.API_ERROR,
        k.RenewFailureReason.CONFLICT,
        k.RenewFailureReason.TIMEOUT,
    ]
    for i, reason in enumerate(reasons):
        f(k.LeaseRenewFailed(lease=LEASE, identity="a", reason=reason, latency_ms=10.0 + i), at=i)
    f(k.LeaseRenewed(lease=LEASE, identity="a", latency_ms=7.0), at=5)
    lease = f.state.snapshot()["leases"][LEASE]
    assert lease["failures"] == {"conflict": 2, "api_error": 1, "timeout": 1}
    assert lease["holders"]["a"]["failures"] == 4
    assert lease["holders"]["a"]["renews"] == 1
    assert lease["holders"]["a"]["last_latency_ms"] == 7.0
    assert [(r["ok"], r["reason"], r["latency_ms"]) for r in lease["renew_history"]] == [
        (False, "conflict", 10.0),
        (False, "api_error", 11.0),
        (False, "conflict", 12.0),
        (False, "timeout", 13.0),
        (True, "", 7.0),
    ]
    assert lease["renew_latency"]["count"] == 1
    assert len(f.state.snapshot()["errors"]) == 4


def test_lease_released_clears_holder_and_standby() -> None:
    f = Feed()
    f(k.LeaseAcquired(lease=LEASE, identity="a"), at=0)
    f(k.LeaseReleased(lease=LEASE, identity="a"), at=3)
    snap = f.state.snapshot()
    assert snap["leases"][LEASE]["holder"] == ""
    assert snap["leases"][LEASE]["released"] == 1
    assert snap["instances"]["a"]["role"] == "standby"


# ---------------------------------------------------------------------------------------------
# Queues, informers, API
# ---------------------------------------------------------------------------------------------


def test_queue_builds_up_and_drains_depth_adds_dones() -> None:
    f = Feed()
    for i, key in enumerate(["ns/a", "ns/b", "ns/c"]):
        f(k.ItemAdded(queue="deployment", key=key, depth=i + 1), at=i * 0.1)
    f(k.ItemAdded(queue="deployment", key="ns/a", queued=False, depth=3), at=0.35)
    expected_depths = []
    for i, key in enumerate(["ns/a", "ns/b", "ns/c"]):
        f(k.ItemTaken(queue="deployment", key=key, depth=2 - i, wait_ms=10.0 * (i + 1)), at=1 + i)
        f(k.ItemDone(queue="deployment", key=key, depth=2 - i, work_ms=2.0), at=1.5 + i)
        expected_depths.append(f.state.snapshot()["queues"]["a"]["deployment"]["depth"])
    q = f.state.snapshot()["queues"]["a"]["deployment"]
    assert expected_depths == [2, 1, 0]
    assert (q["depth"], q["max_depth"], q["adds"], q["deduped"]) == (0, 3, 4, 1)
    assert (q["gets"], q["dones"], q["retries"], q["drops"]) == (3, 3, 0, 0)
    assert q["wait"]["count"] == 3
    assert q["wait"]["max"] == 30.0
    assert q["work"]["sum"] == 6.0
    assert q["adds_per_s"] == 0.4  # 4 adds in the 10 s window ending at the newest ts


def test_queue_stale_depth_event_does_not_override_newer() -> None:
    f = Feed()
    f(k.ItemAdded(queue="q", key="x", depth=5), at=2)
    f(k.ItemTaken(queue="q", key="x", depth=9), at=1)  # out of order: older ts
    assert f.state.snapshot()["queues"]["a"]["q"]["depth"] == 5


def test_queue_adds_rate_over_last_ten_seconds() -> None:
    f = Feed()
    for i in range(30):
        f(k.ItemAdded(queue="q", key=f"k{i}"), at=i * 0.5)  # 2 adds/s for 15 s
    q = f.state.snapshot()["queues"]["a"]["q"]
    # now = 14.5 s -> seconds 5..14 inclusive hold 2 adds each
    assert q["adds_per_s"] == 2.0


def test_informer_relist_and_watch_close_reasons() -> None:
    f = Feed()
    f(k.InformerStarted(resource="pods", resync_s=30.0), at=0)
    span = f.span()
    f(k.InformerListBegan(resource="pods"), at=0, span_id=span)
    f(
        k.InformerListFinished(
            resource="pods", items=40, bytes=9000, pages=1, resource_version="10"
        ),
        at=0.2,
        span_id=span,
        dur_ns=200_000_000,
    )
    f(k.InformerSynced(resource="pods", objects=40, duration_ms=250.0), at=0.25)
    f(k.WatchOpened(resource="pods", resource_version="10"), at=0.3)
    f(
        k.WatchClosed(
            resource="pods", reason=k.WatchCloseReason.TIMEOUT, events=7, resource_version="17"
        ),
        at=300,
    )
    f(k.WatchOpened(resource="pods", resource_version="17"), at=300)
    f(k.WatchClosed(resource="pods", reason=k.WatchCloseReason.EXPIRED, events=2), at=400)
    f(k.InformerRelisted(resource="pods", reason="expired"), at=400)
    f(k.InformerBackedOff(resource="pods", delay_ms=800.0, reason="error"), at=400)
    f(k.WatchClosed(resource="pods", reason=k.WatchCloseReason.ERROR, error="EOF"), at=401)
    snap = f.state.snapshot()
    inf = snap["informers"]["a"]["pods"]
    assert inf["watch_closes"] == {"timeout": 1, "expired": 1, "error": 1}
    assert (inf["watch_opens"], inf["watch_events"], inf["resource_version"]) == (2, 9, "17")
    assert (inf["relists"], inf["relist_reasons"]) == (1, {"expired": 1})
    assert (inf["backoffs"], inf["last_backoff_ms"]) == (1, 800.0)
    assert (inf["synced"], inf["objects"], inf["lists"], inf["list_bytes"]) == (True, 40, 1, 9000)
    assert inf["last_error"] == "EOF"
    assert errors_of(snap) == [("a", "informer.watch_closed", "watch pods closed: EOF")]


@pytest.mark.parametrize(
    ("code", "klass", "errors"),
    [
        pytest.param(200, "2xx", 0, id="ok"),
        pytest.param(404, "4xx", 0, id="not-found-not-error"),
        pytest.param(503, "5xx", 1, id="server-error"),
        pytest.param(0, "none", 1, id="no-response"),
    ],
)
def test_api_request_code_class_and_error_counting(code: int, klass: str, errors: int) -> None:
    f = Feed()
    f(
        k.ApiRequestCompleted(verb="get", resource="pods", code=code, rate_limiter_wait_ms=1.5),
        at=0,
        dur_ns=2_000_000,
    )
    api = f.state.snapshot()["api"]["a"]
    assert api["codes"] == {klass: 1}
    assert (api["errors"], api["verbs"], api["rate_limiter_wait_ms"]) == (errors, {"get": 1}, 1.5)
    assert api["latency"]["max"] == 2.0
    assert len(f.state.snapshot()["errors"]) == errors


# ---------------------------------------------------------------------------------------------
# Controllers and reconciles
# ---------------------------------------------------------------------------------------------


def reconcile(
    f: Feed, key: str, dur_s: float, *, at: float, instance: str = "a", **end: Any
) -> str:
    span = f.span()
    trace = f"{span:0>32}"
    f(
        k.ReconcileStarted(controller="deployment", key=key),
        at=at,
        instance=instance,
        span_id=span,
        trace_id=trace,
    )
    outcome = end.pop("outcome", Outcome.OK)
    f(
        k.ReconcileFinished(controller="deployment", key=key, **end),
        at=at + dur_s,
        instance=instance,
        span_id=span,
        trace_id=trace,
        dur_ns=int(dur_s * S),
        outcome=outcome,
    )
    return trace


def test_controller_slow_reconciles_in_slowest_keys_with_trace_ids() -> None:
    f = Feed()
    traces = {}
    for i in range(SLOWEST_KEYS + 20):
        traces[f"ns/k{i}"] = reconcile(f, f"ns/k{i}", 0.001 * (i + 1), at=i)
    c = f.state.snapshot()["controllers"]["a"]["deployment"]
    slowest = {r["key"]: r for r in c["slowest"]}
    assert len(slowest) == SLOWEST_KEYS
    assert set(slowest) == {f"ns/k{i}" for i in range(20, SLOWEST_KEYS + 20)}
    assert slowest["ns/k69"]["trace_id"] == traces["ns/k69"]
    assert slowest["ns/k69"]["dur_ns"] == 70_000_000
    assert c["slow_floor"] == 21_000_000
    assert c["reconciles"] == SLOWEST_KEYS + 20
    assert c["latency"]["count"] == SLOWEST_KEYS + 20
    assert c["in_flight"] == 0


def test_controller_results_and_failing_keys() -> None:
    f = Feed()
    reconcile(f, "ns/a", 0.01, at=0)
    reconcile(f, "ns/b", 0.01, at=1, outcome=Outcome.ERROR, error="boom")
    reconcile(f, "ns/c", 0.01, at=2, result=k.ReconcileResult.CONFLICT)
    reconcile(f, "ns/b", 0.02, at=3, result=k.ReconcileResult.ERROR, error="again")
    reconcile(f, "ns/d", 0.01, at=4, outcome=Outcome.CANCELLED)
    c = f.state.snapshot()["controllers"]["a"]["deployment"]
    assert c["results"] == {
        "success": 1,
        "requeue": 0,
        "requeue_after": 0,
        "error": 2,
        "conflict": 1,
        "cancelled": 1,
    }
    assert c["reconciles"] == sum(c["results"].values()) == 5
    assert c["errors"] == 3
    assert [(r["key"], r["count"], r["error"]) for r in c["failing"]] == [
        ("ns/b", 2, "again"),
        ("ns/d", 1, ""),
    ]


def test_controller_failing_keys_bounded_least_recent_evicted() -> None:
    f = Feed()
    for i in range(FAILING_KEYS + 5):
        reconcile(f, f"ns/k{i}", 0.01, at=i, outcome=Outcome.ERROR, error="x")
    failing = f.state.snapshot()["controllers"]["a"]["deployment"]["failing"]
    assert [r["key"] for r in failing] == [f"ns/k{i}" for i in range(5, FAILING_KEYS + 5)]


def test_controller_lifecycle_init_started_disabled() -> None:
    f = Feed()
    span = f.span()
    f(k.ControllerInitBegan(controller="deployment"), at=0, span_id=span)
    f(
        k.ControllerInitFinished(controller="deployment", started=True),
        at=0.01,
        span_id=span,
        dur_ns=10_000_000,
    )
    f(k.ControllerStarted(controller="deployment", workers=5), at=1)
    f(k.ControllerDisabled(controller="bootstrapsigner", reason="disabled by default"), at=0)
    cs = f.state.snapshot()["controllers"]["a"]
    assert (cs["deployment"]["init"], cs["deployment"]["init_ms"]) == ("started", 10.0)
    assert (cs["deployment"]["started"], cs["deployment"]["workers"]) == (True, 5)
    assert cs["bootstrapsigner"]["disabled"] is True
    bar = f.state.snapshot()["instances"]["a"]["steps"]["controller.init/deployment"]
    assert bar == {"start_ts": T0, "dur_ns": 10_000_000, "outcome": "ok", "error": ""}


# ---------------------------------------------------------------------------------------------
# Steps: in flight, ends without begins, out of order
# ---------------------------------------------------------------------------------------------


def test_in_flight_begin_without_end_longest_running() -> None:
    f = Feed()
    f(k.ReconcileStarted(controller="deployment", key="ns/x"), at=0, span_id="1" * 16)
    f(k.ReconcileStarted(controller="deployment", key="ns/y"), at=3, span_id="2" * 16)
    f(k.ItemAdded(queue="q", key="z"), at=5)
    snap = f.state.snapshot()
    c = snap["controllers"]["a"]["deployment"]
    assert (c["in_flight"], c["longest_running_ns"]) == (2, 5 * S)
    assert snap["in_flight"]["total"] == 2
    assert snap["in_flight"]["by_step"] == {"reconcile": 2}


def test_in_flight_end_without_begin_applied_not_in_flight() -> None:
    f = Feed()
    f(k.ReconcileFinished(controller="deployment", key="ns/x"), at=1, span_id="9" * 16, dur_ns=S)
    snap = f.state.snapshot()
    c = snap["controllers"]["a"]["deployment"]
    assert (c["reconciles"], c["in_flight"], snap["in_flight"]["total"]) == (1, 0, 0)
    # the begin arriving late (an out-of-order merge) does not count as in flight
    f(k.ReconcileStarted(controller="deployment", key="ns/x"), at=0, span_id="9" * 16, seq=1)
    snap = f.state.snapshot()
    assert snap["in_flight"]["total"] == 0
    assert snap["counters"]["out_of_order"] == 1


def test_in_flight_bounded_oldest_evicted_and_counted() -> None:
    f = Feed()
    for i in range(MAX_IN_FLIGHT + 10):
        f(k.ReconcileStarted(controller="c", key=f"k{i}"), at=0, span_id=f"{i + 1:016x}")
    snap = f.state.snapshot()
    assert snap["in_flight"]["total"] == MAX_IN_FLIGHT
    assert snap["counters"]["in_flight_evicted"] == 10
    assert snap["in_flight"]["open"][0]["key"] == "k10"


def test_startup_waterfall_first_occurrence_wins() -> None:
    f = Feed()
    root = f.span()
    f(k.StartupBegan(command="run", version="0.1"), at=0, span_id=root)
    f(k.FlagsParsed(changed_count=2), at=0.01, dur_ns=10_000_000)
    lst = f.span()
    f(k.InformerListBegan(resource="pods"), at=0.5, span_id=lst)
    f(k.InformerListFinished(resource="pods", items=3), at=0.7, span_id=lst, dur_ns=200_000_000)
    relist = f.span()
    f(k.InformerListBegan(resource="pods"), at=50, span_id=relist)
    f(k.InformerListFinished(resource="pods"), at=51, span_id=relist, dur_ns=S)
    f(k.LeaseAcquired(lease=LEASE, identity="a", waited_ms=300.0), at=0.4)
    f(k.StartupFinished(), at=1, span_id=root, dur_ns=S)
    steps = f.state.snapshot()["instances"]["a"]["steps"]
    assert {n: (b["start_ts"] - T0, b["dur_ns"], b["outcome"]) for n, b in steps.items()} == {
        "startup": (0, S, "ok"),
        "flags.parsed": (0, 10_000_000, "ok"),
        "informer.list/pods": (500_000_000, 200_000_000, "ok"),
        "lease.acquired": (100_000_000, 300_000_000, "ok"),
    }
    assert f.state.snapshot()["instances"]["a"]["version"] == "0.1"


def test_step_end_error_outcome_goes_to_errors_ring() -> None:
    f = Feed()
    span = f.span()
    f(k.InformerListBegan(resource="pods"), at=0, span_id=span)
    f(
        k.InformerListFinished(resource="pods"),
        at=1,
        span_id=span,
        outcome=Outcome.ERROR,
        error="HTTPError: 500",
        trace_id="f" * 32,
    )
    snap = f.state.snapshot()
    assert errors_of(snap) == [("a", "informer.list.end", "HTTPError: 500")]
    assert snap["errors"][0]["trace_id"] == "f" * 32
    assert snap["informers"]["a"]["pods"]["list_errors"] == 1


def test_errors_ring_bounded_keeps_newest() -> None:
    f = Feed()
    for i in range(MAX_ERRORS + 25):
        f(k.ItemDropped(queue="q", key=f"k{i}", retries=15, reason="max_retries"), at=i)
    errs = f.state.snapshot()["errors"]
    assert len(errs) == MAX_ERRORS
    assert errs[0]["text"] == "q dropped k25 after 15 retries: max_retries"
    assert errs[-1]["ts"] == T0 + (MAX_ERRORS + 24) * S


# ---------------------------------------------------------------------------------------------
# The bus, unknown kinds, several instances
# ---------------------------------------------------------------------------------------------


def test_unknown_kinds_and_lag_events_counted() -> None:
    state = State()
    unknown = decode(b'{"kind":"future.thing","seq":1,"ts":5,"instance":"a","x":1}')
    assert isinstance(unknown, UnknownEvent)
    state.apply(unknown)
    state.apply(decode(encode(unknown)))
    state.apply(decode(b'{"kind":"other.thing","seq":3,"ts":6,"instance":"a"}'))
    state.apply(k.SubscriberLagged(subscriber="tui", lost=120, ts=7))
    state.apply(k.SubscriberLagged(subscriber="tui", lost=5, ts=8))
    counters = state.snapshot()["counters"]
    assert counters["unknown"] == {"future.thing": 2, "other.thing": 1}
    assert (counters["lost"], counters["lag_events"], counters["applied"]) == (125, 2, 5)
    assert counters["out_of_order"] == 1  # the re-decoded copy repeats seq 1


def test_several_instances_separate_records_and_last_seq() -> None:
    f = Feed()
    for inst in ("a", "b", "c"):
        for i in range(3):
            f(k.ItemAdded(queue="q", key="x", depth=i), at=i, instance=inst)
    snap = f.state.snapshot()
    assert sorted(snap["queues"]) == ["a", "b", "c"]
    assert {n: i["last_seq"] for n, i in snap["instances"].items()} == {"a": 3, "b": 3, "c": 3}
    assert all(snap["queues"][n]["q"]["adds"] == 3 for n in "abc")


# ---------------------------------------------------------------------------------------------
# Properties: random interleavings, restore round trip
# ---------------------------------------------------------------------------------------------

_point_kinds = st.sampled_from(["add", "get", "done", "drop", "api", "renew", "fail", "watch"])


def make_point(which: str, q: str, depth: int, env: dict[str, Any]) -> Event:
    if which == "add":
        return k.ItemAdded(queue=q, key="x", depth=depth, **env)
    if which == "get":
        return k.ItemTaken(queue=q, key="x", depth=depth, wait_ms=1.0, **env)
    if which == "done":
        return k.ItemDone(queue=q, key="x", depth=depth, work_ms=2.0, **env)
    if which == "drop":
        return k.ItemDropped(queue=q, key="x", **env)
    if which == "api":
        return k.ApiRequestCompleted(verb="get", code=depth * 30, **env)
    if which == "renew":
        return k.LeaseRenewed(lease=LEASE, identity=env["instance"], **env)
    if which == "fail":
        return k.LeaseRenewFailed(lease=LEASE, **env)
    return k.WatchClosed(resource="pods", events=depth, **env)


@st.composite
def streams(draw: st.DrawFn) -> list[Event]:
    """Random begin/end pairs (nested, some ends or begins missing, some swapped) and points."""
    n_instances = draw(st.integers(1, 3))
    events: list[Event] = []
    ts = T0
    seqs = dict.fromkeys(range(n_instances), 0)
    n_steps = draw(st.integers(0, 25))
    pending: list[tuple[int, Event]] = []
    span_no = itertools.count(1)
    for _ in range(draw(st.integers(0, 60))):
        inst = draw(st.integers(0, n_instances - 1))
        seqs[inst] += 1
        ts += draw(st.integers(0, 3 * S))
        env = {"seq": seqs[inst], "ts": ts, "instance": f"r{inst}"}
        choice = draw(st.integers(0, 3))
        if choice == 0 and n_steps:
            n_steps -= 1
            span = f"{next(span_no):016x}"
            key = f"ns/k{draw(st.integers(0, 5))}"
            mode = draw(st.sampled_from(["pair", "pair", "no_end", "no_begin", "swapped"]))
            begin = k.ReconcileStarted(controller="c", key=key, span_id=span, **env)
            outcome = draw(st.sampled_from(list(Outcome)))
            result = draw(st.sampled_from(list(k.ReconcileResult)))
            end = k.ReconcileFinished(
                controller="c",
                key=key,
                span_id=span,
                result=result,
                outcome=outcome,
                dur_ns=draw(st.integers(0, 5 * S)),
                **{**env, "ts": ts + 1},
            )
            if mode in ("pair", "no_end", "swapped"):
                events.append(end if mode == "swapped" else begin)
            if mode in ("pair", "no_begin", "swapped"):
                pending.append((draw(st.integers(0, 10)), begin if mode == "swapped" else end))
        else:
            which = draw(_point_kinds)
            q = f"q{draw(st.integers(0, 2))}"
            depth = draw(st.integers(0, 20))
            point = make_point(which, q, depth, env)
            events.append(point)
        # release ends whose delay ran out (random nesting of steps)
        still = []
        for delay, ev in pending:
            if delay <= 0:
                events.append(ev)
            else:
                still.append((delay - 1, ev))
        pending = still
    events.extend(ev for _, ev in pending if draw(st.booleans()))
    return events


def expected_in_flight(events: list[Event]) -> int:
    begins = {e.span_id for e in events if isinstance(e, k.ReconcileStarted)}
    ends = {e.span_id for e in events if isinstance(e, k.ReconcileFinished)}
    return len(begins - ends)


def walk(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk(v)
    else:
        yield value


@settings(max_examples=200, deadline=None)
@given(streams())
def test_state_random_interleaving_snapshot_consistent(events: list[Event]) -> None:
    state = State()
    state.apply_all(events)
    snap = state.snapshot()
    assert snap["in_flight"]["total"] == expected_in_flight(events)
    flights = [c["in_flight"] for t in snap["controllers"].values() for c in t.values()]
    assert sum(flights) == expected_in_flight(events)
    for table in snap["controllers"].values():
        for c in table.values():
            assert c["reconciles"] == sum(c["results"].values())
            assert c["reconciles"] == c["latency"]["count"]
    ends = sum(isinstance(e, k.ReconcileFinished) for e in events)
    assert sum(c["reconciles"] for t in snap["controllers"].values() for c in t.values()) == ends
    assert snap["counters"]["applied"] == len(events)
    numbers = [v for v in walk(snap) if isinstance(v, int | float) and not isinstance(v, bool)]
    assert all(v >= 0 for v in numbers)
    assert orjson.loads(orjson.dumps(snap)) == snap


@settings(max_examples=150, deadline=None)
@given(streams(), st.data())
def test_state_restore_round_trip_continues_identically(
    events: list[Event], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(events)))
    whole = State()
    whole.apply_all(events)
    first = State()
    first.apply_all(events[:cut])
    wire = orjson.loads(orjson.dumps(first.snapshot()))
    resumed = State.restore(wire)
    resumed.apply_all(events[cut:])
    assert resumed.snapshot() == whole.snapshot()


# ---------------------------------------------------------------------------------------------
# Bounds
# ---------------------------------------------------------------------------------------------


def test_state_100k_events_10k_keys_tables_bounded() -> None:
    state = State()
    apply = state.apply
    for i in range(100_000):
        key = f"ns/k{i % 10_000}"
        span = f"{i + 1:016x}"
        ts = T0 + i * 1000
        n = i % 10
        if n == 0:
            apply(k.ReconcileStarted(controller="c", key=key, span_id=span, ts=ts, seq=i + 1))
        elif n == 1:
            apply(
                k.ReconcileFinished(
                    controller="c",
                    key=key,
                    span_id=f"{i + 7:016x}",
                    ts=ts,
                    dur_ns=i,
                    outcome=Outcome.ERROR,
                    seq=i + 1,
                )
            )
        elif n == 2:
            apply(k.ItemAdded(queue=f"q{i % 3000}", key=key, ts=ts, seq=i + 1))
        elif n == 3:
            apply(k.InformerSynced(resource=f"r{i % 3000}", ts=ts, seq=i + 1))
        elif n == 4:
            apply(k.LeaseRenewed(lease=f"ns/l{i % 3000}", identity=key, ts=ts, seq=i + 1))
        elif n == 5:
            apply(UnknownEvent(kind=f"x.{i}", ts=ts, seq=i + 1))
        elif n == 6:
            apply(k.HealthCheckChanged(check=key, ts=ts, seq=i + 1, instance=f"i{i % 300}"))
        elif n == 7:
            apply(k.ApiRequestCompleted(verb=key, code=500, ts=ts, seq=i + 1))
        else:
            apply(k.ControllerStarted(controller=f"c{i % 3000}", ts=ts, seq=i + 1))
    snap = state.snapshot()
    c = snap["controllers"][""]["c"]
    assert len(c["slowest"]) == SLOWEST_KEYS
    assert len(c["failing"]) == FAILING_KEYS
    assert snap["in_flight"]["total"] <= MAX_IN_FLIGHT
    assert len(state.ended_early) <= 1024
    assert len(state.queues) <= MAX_TABLE
    assert len(state.informers) <= MAX_TABLE
    assert len(state.controllers) <= MAX_TABLE
    assert len(state.leases) <= 256
    assert len(state.instances) <= 64
    assert len(snap["counters"]["unknown"]) <= 65
    assert len(snap["api"][""]["verbs"]) <= 33
    assert len(snap["errors"]) == MAX_ERRORS
    assert all(len(i["health"]) <= 64 for i in snap["instances"].values())
    assert all(len(lease["holders"]) <= 16 for lease in snap["leases"].values())


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b'{"kind":"queue.add","ts":"soon","queue":"q"}', id="ts-not-int"),
        pytest.param(b'{"kind":"queue.add","instance":["a"],"queue":"q"}', id="instance-list"),
        pytest.param(b'{"kind":"queue.add","queue":"q","depth":"deep"}', id="depth-str"),
        pytest.param(b'{"kind":"api.request","code":"500"}', id="code-str"),
        pytest.param(b'{"kind":"reconcile.end","dur_ns":"slow","controller":"c"}', id="dur-str"),
    ],
)
def test_state_malformed_decoded_event_counted_not_raised(line: bytes) -> None:
    state = State()
    state.apply(decode(line))
    state.apply(k.ItemAdded(queue="ok", key="x", depth=1, ts=T0, seq=9, instance="a"))
    snap = state.snapshot()
    assert snap["counters"]["malformed"] == 1
    assert snap["counters"]["applied"] == 2
    assert snap["queues"]["a"]["ok"]["depth"] == 1
    orjson.dumps(snap)


def test_instance_new_startup_after_finished_one_resets_waterfall_and_role() -> None:
    f = Feed()
    first = f.span()
    f(k.StartupBegan(version="0.1"), at=0, span_id=first)
    f(k.LeaseAcquired(lease=LEASE, identity="a"), at=1)
    f(k.StartupFinished(), at=2, span_id=first, dur_ns=2 * S)
    f(k.ManagerStopped(reason="lease lost", exit_code=1), at=30)
    assert f.state.snapshot()["instances"]["a"]["role"] == "stopped"
    second = f.span()
    f(k.StartupBegan(version="0.2"), at=40, span_id=second)
    inst = f.state.snapshot()["instances"]["a"]
    assert (inst["role"], inst["version"], inst["exit_code"]) == ("unknown", "0.2", None)
    assert inst["steps"] == {
        "startup": {"start_ts": T0 + 40 * S, "dur_ns": 0, "outcome": "", "error": ""}
    }
    assert errors_of(f.state.snapshot()) == [
        ("a", "manager.stopped", "manager stopped (exit 1): lease lost")
    ]


def test_health_check_changes_keep_latest_state() -> None:
    f = Feed()
    f(k.HealthCheckChanged(check="leaderElection", healthy=True), at=0)
    f(k.HealthCheckChanged(check="leaderElection", healthy=False, reason="renew late"), at=5)
    health = f.state.snapshot()["instances"]["a"]["health"]
    assert health == {
        "leaderElection": {"healthy": False, "reason": "renew late", "ts": T0 + 5 * S}
    }


def test_rate_window_old_counts_fall_out_and_late_events_dropped() -> None:
    from pycm.trace.records import RateWindow

    w = RateWindow()
    for sec in range(100):
        w.add(T0 + sec * S)
    w.add(T0 + 10 * S)  # 90 s old: its slot now holds second 70
    now = T0 + 99 * S
    assert w.total(now, 10) == 10
    assert w.total(now, 60) == 60
    assert w.rate(now, 10) == 1.0
    assert w.total(T0 + 200 * S, 10) == 0


def test_state_kind_without_handler_steps_still_tracked_in_flight() -> None:
    from pycm.trace.events import StepBegin, StepEnd, event_base

    @event_base
    class LaterFinished(StepEnd):
        """Stands for a step kind added to kinds.py after the reducer was written."""

    @event_base
    class LaterBegan(StepBegin):
        STEP = "later"
        END = LaterFinished

    state = State()
    state.apply(LaterBegan(span_id="a" * 16, ts=T0, seq=1))
    state.apply(LaterBegan(span_id="b" * 16, ts=T0, seq=2))
    state.apply(LaterFinished(span_id="a" * 16, ts=T0 + S, seq=3, outcome=Outcome.ERROR, error="x"))
    snap = state.snapshot()
    assert (snap["in_flight"]["total"], snap["in_flight"]["by_step"]) == (1, {"later": 1})
    assert [e["text"] for e in snap["errors"]] == ["x"]


_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=5),
    st.sampled_from(["error", "ok", "timeout", "r0", "r1", LEASE]),
)


@st.composite
def garbage_events(draw: st.DrawFn) -> Event:
    """A decoded event of a known kind whose attributes hold arbitrary JSON scalars."""
    from pycm.trace.codec import from_dict
    from pycm.trace.events import REGISTRY

    name = draw(st.sampled_from(sorted(REGISTRY)))
    obj: dict[str, Any] = {"kind": name}
    for attr, _ in REGISTRY[name].fields:
        if draw(st.booleans()):
            obj[attr] = draw(_json_scalars)
    for attr in ("seq", "ts", "instance", "span_id", "dur_ns", "trace_id"):
        if draw(st.booleans()):
            obj[attr] = draw(_json_scalars)
    return from_dict(obj)


@settings(max_examples=300, deadline=None)
@given(st.lists(garbage_events(), max_size=30))
def test_state_arbitrary_attribute_values_never_raise_snapshot_jsonable(
    events: list[Event],
) -> None:
    state = State()
    state.apply_all(events)
    snap = state.snapshot()
    assert snap["counters"]["applied"] == len(events)
    wire = orjson.loads(orjson.dumps(snap))
    State.restore(wire).snapshot()


def test_state_restore_empty_snapshot_equals_new_state() -> None:
    assert State.restore({}).snapshot() == State().snapshot()


def test_state_every_registered_kind_applies_cleanly_and_round_trips() -> None:
    from tests.trace.kind_samples import all_samples

    samples = all_samples()
    state = State()
    state.apply_all(samples)
    snap = state.snapshot()
    assert snap["counters"]["applied"] == len(samples)
    assert snap["counters"]["malformed"] == 0
    assert snap["counters"]["unknown"] == {}
    wire = orjson.loads(orjson.dumps(snap))
    resumed = State.restore(wire)
    assert resumed.snapshot() == snap
    # the samples share one span id and each end precedes its begin: nothing stays in flight
    assert snap["in_flight"]["total"] == 0


def test_state_huge_millisecond_durations_keep_the_snapshot_encodable() -> None:
    """A corrupt duration_ms/waited_ms (9e12 ms = 2**63 ns) must not break orjson's int range."""
    from pycm.trace.kinds import InformerSynced, LeaseAcquired

    state = State()
    state.apply(InformerSynced(resource="pods", duration_ms=9.3e12, ts=T0, seq=1))
    state.apply(LeaseAcquired(lease=LEASE, waited_ms=-5.0e15, ts=T0, seq=2))
    wire = orjson.loads(orjson.dumps(state.snapshot()))
    assert State.restore(wire).snapshot()["counters"]["applied"] == 2
