"""Helpers of the state tests: a feed that stamps events as a bus would, and Hypothesis
strategies for random streams."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from pycm.trace import kinds as k
from pycm.trace.events import Event, Outcome
from pycm.trace.state import State

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


_point_kinds = st.sampled_from(
    ["add", "get", "done", "drop", "api", "renew", "fail", "watch", "progress"]
)


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
    if which == "progress":
        return k.InformerProgress(resource="pods", objects=depth, watch_events=depth, **env)
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
