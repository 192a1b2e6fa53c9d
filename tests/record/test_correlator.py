"""The event correlator against client-go's own cases (tools/record/events_cache_test.go):
TestEventAggregatorByReasonFunc, TestEventAggregatorByReasonMessageFunc, TestEventCorrelator and
TestEventSpamFilter, with client-go's clock (each reading advances it by the interval) — plus
the facts of events_cache.go those tables leave implicit."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from pycm.record.correlator import (
    COMBINED_PREFIX,
    DEFAULT_AGGREGATE_INTERVAL_S,
    DEFAULT_AGGREGATE_MAX_EVENTS,
    DEFAULT_SPAM_BURST,
    CorrelatorOptions,
    EventCorrelator,
    event_aggregator_by_reason,
    event_aggregator_by_reason_message,
    get_event_key,
    get_spam_key,
    populate_defaults,
)
from pycm.util.clock import REAL_CLOCK

Obj = dict[str, Any]
WALL_START_NS = 1_700_000_000 * 10**9


class IntervalClock:
    """client-go's testclocks.SimpleIntervalClock: every reading of the time moves it on by
    ``step`` seconds first. The correlator reads monotonic time once per stage (as client-go
    reads Now); wall time follows it without moving it."""

    def __init__(self, step: float) -> None:
        self._step_ns = round(step * 1e9)
        self._ns = 0

    def monotonic_ns(self) -> int:
        self._ns += self._step_ns
        return self._ns

    def monotonic(self) -> float:
        return self.monotonic_ns() / 1e9

    def wall_ns(self) -> int:
        return WALL_START_NS + self._ns

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("the correlator never sleeps")


def object_reference(kind: str, name: str, namespace: str) -> Obj:
    return {
        "kind": kind,
        "name": name,
        "namespace": namespace,
        "uid": "C934D34AFB20242",
        "apiVersion": "version",
        "fieldPath": "spec.containers{mycontainer}",
    }


def make_event(reason: str, message: str, involved: Obj) -> Obj:
    return {
        "metadata": {},
        "reason": reason,
        "message": message,
        "involvedObject": involved,
        "source": {"component": "kubelet", "host": "kublet.node1"},
        "count": 1,
        "type": "Normal",
    }


def make_events(n: int, template: Obj) -> list[Obj]:
    return [copy.deepcopy(template) for _ in range(n)]


def make_unique_events(n: int) -> list[Obj]:
    return [
        make_event(f"reason-{i}", f"message-{i}", object_reference("Pod", f"pod-{i}", f"ns-{i}"))
        for i in range(n)
    ]


def make_similar_events(n: int, template: Obj, prefix: str) -> list[Obj]:
    events = make_events(n, template)
    for i, event in enumerate(events):
        event["message"] = f"{prefix}-{i}-{event['message']}"
    return events


def with_count(event: Obj, count: int) -> Obj:
    return {**copy.deepcopy(event), "count": count}


def _stamp(clock: IntervalClock, event: Obj) -> Obj:
    now = dt.datetime.fromtimestamp(
        (WALL_START_NS + clock.monotonic_ns()) / 1e9, tz=dt.UTC
    ).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {**copy.deepcopy(event), "firstTimestamp": now, "lastTimestamp": now}


_COMPARED = ("reason", "message", "involvedObject", "source", "count", "type")


def validate_event(actual: Obj, expected: Obj) -> None:
    """client-go's validateEvent: timestamps set, equal for one occurrence and different for
    a compressed one; every other field as expected (the name only by its prefix)."""
    first, last = actual.get("firstTimestamp"), actual.get("lastTimestamp")
    assert first and last
    assert (first == last) is (expected["count"] == 1), (first, last)
    assert {k: actual.get(k) for k in _COMPARED} == {k: expected.get(k) for k in _COMPARED}
    assert str(actual["metadata"].get("name", "")).startswith(expected["metadata"].get("name", ""))


def test_event_aggregator_by_reason_func() -> None:
    event1 = make_event("end-of-world", "it was fun", object_reference("Pod", "pod1", "other"))
    event2 = make_event("end-of-world", "it was awful", object_reference("Pod", "pod1", "other"))
    event3 = make_event("nevermind", "it was a bug", object_reference("Pod", "pod1", "other"))
    agg1, local1 = event_aggregator_by_reason(event1)
    agg2, local2 = event_aggregator_by_reason(event2)
    agg3, _ = event_aggregator_by_reason(event3)
    assert agg1 == agg2
    assert local1 != local2
    assert agg1 != agg3


def test_event_aggregator_by_reason_message_func() -> None:
    event = make_event("end-of-world", "it was fun", object_reference("Pod", "pod1", "other"))
    assert event_aggregator_by_reason_message(event) == COMBINED_PREFIX + "it was fun"


first_event = make_event("first", "i am first", object_reference("Pod", "my-pod", "my-ns"))
duplicate_event = make_event("duplicate", "me again", object_reference("Pod", "my-pod", "my-ns"))
unique_event = make_event("unique", "snowflake", object_reference("Pod", "my-pod", "my-ns"))
similar_event = make_event("similar", "similar message", object_reference("Pod", "my-pod", "my-ns"))
similar_event["involvedObject"]["fieldPath"] = "spec.containers{container1}"
aggregate_event = make_event(
    similar_event["reason"],
    event_aggregator_by_reason_message(similar_event),
    similar_event["involvedObject"],
)
similar_other_container = copy.deepcopy(similar_event)
similar_other_container["involvedObject"]["fieldPath"] = "spec.containers{container2}"

# name: (previous events, new event, expected event or None for a skip, interval seconds)
SCENARIOS: dict[str, tuple[list[Obj], Obj, Obj | None, int]] = {
    "create-a-single-event": ([], first_event, with_count(first_event, 1), 5),
    "the-same-event-should-just-count": (
        make_events(1, duplicate_event),
        duplicate_event,
        with_count(duplicate_event, 2),
        5,
    ),
    "the-same-event-should-just-count-even-if-more-than-aggregate": (
        make_events(DEFAULT_AGGREGATE_MAX_EVENTS, duplicate_event),
        duplicate_event,
        with_count(duplicate_event, DEFAULT_AGGREGATE_MAX_EVENTS + 1),
        30,  # larger interval induces aggregation but not spam
    ),
    "the-same-event-is-spam-if-happens-too-frequently": (
        make_events(DEFAULT_SPAM_BURST + 1, duplicate_event),
        duplicate_event,
        None,
        1,
    ),
    "create-many-unique-events": (
        make_unique_events(30),
        unique_event,
        with_count(unique_event, 1),
        5,
    ),
    "similar-events-should-aggregate-event": (
        make_similar_events(
            DEFAULT_AGGREGATE_MAX_EVENTS - 1, similar_event, similar_event["message"]
        ),
        similar_event,
        with_count(aggregate_event, 1),
        5,
    ),
    "similar-events-many-times-should-count-the-aggregate": (
        make_similar_events(DEFAULT_AGGREGATE_MAX_EVENTS, similar_event, similar_event["message"]),
        similar_event,
        with_count(aggregate_event, 2),
        5,
    ),
    "events-from-different-containers-do-not-aggregate": (
        make_events(1, similar_other_container),
        similar_event,
        with_count(similar_event, 1),
        5,
    ),
    "similar-events-whose-interval-is-greater-than-aggregate-interval-do-not-aggregate": (
        make_similar_events(
            DEFAULT_AGGREGATE_MAX_EVENTS - 1, similar_event, similar_event["message"]
        ),
        similar_event,
        with_count(similar_event, 1),
        DEFAULT_AGGREGATE_INTERVAL_S,
    ),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_event_correlator(name: str) -> None:
    previous, new, expected, interval = SCENARIOS[name]
    clock = IntervalClock(interval)
    correlator = EventCorrelator(clock=clock)
    for event in previous:
        result = correlator.correlate(_stamp(clock, event))
        if not result.skip:  # as the broadcaster: the server's state after each write
            correlator.update_state(result.event)
    result = correlator.correlate(_stamp(clock, new))
    assert result.skip is (expected is None)
    if expected is not None:
        validate_event(result.event, expected)


def _by_object_and_reason(event: Obj) -> str:
    return get_spam_key(event) + str(event.get("reason", ""))


@pytest.mark.parametrize(
    ("new", "spam_key_func", "skip"),
    [
        pytest.param(
            make_event("duplicate", "me again", object_reference("Pod", "my-pod", "my-ns")),
            None,
            True,
            id="same object is spam for the default filter",
        ),
        pytest.param(
            make_event("duplicate", "me again", object_reference("Pod", "my-pod", "my-ns")),
            _by_object_and_reason,
            False,
            id="same object, other reason, is not spam for a reason-keyed filter",
        ),
        pytest.param(
            make_event("original", "me again", object_reference("Pod", "my-pod", "my-ns")),
            _by_object_and_reason,
            True,
            id="same object and reason, other message, is spam for a reason-keyed filter",
        ),
    ],
)
def test_event_spam_filter(new: Obj, spam_key_func: Any, skip: bool) -> None:
    # makeEvent stamps metav1.Now(), not the test clock.
    new = {**new, "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"}
    clock = IntervalClock(1)
    correlator = EventCorrelator(
        CorrelatorOptions(clock=clock, spam_key_func=spam_key_func, burst_size=1)
    )
    original = make_event("original", "i am first", object_reference("Pod", "my-pod", "my-ns"))
    result = correlator.correlate(original)
    assert not result.skip
    correlator.update_state(result.event)
    result = correlator.correlate(new)
    assert result.skip is skip
    if not skip:
        validate_event(result.event, with_count(new, 1))


def test_options_zero_values_take_client_go_defaults() -> None:
    opts = populate_defaults(CorrelatorOptions())
    assert (opts.lru_cache_size, opts.burst_size, opts.max_events) == (4096, 25, 10)
    assert (opts.qps, opts.max_interval_in_seconds, opts.clock) == (1 / 300, 600, REAL_CLOCK)
    assert opts.key_func is event_aggregator_by_reason
    assert opts.message_func is event_aggregator_by_reason_message
    assert opts.spam_key_func is get_spam_key
    custom = populate_defaults(CorrelatorOptions(burst_size=3, max_events=4))
    assert (custom.burst_size, custom.max_events, custom.lru_cache_size) == (3, 4, 4096)


def test_keys_join_fields_with_no_separator() -> None:
    # client-go joins with "": these two objects share a spam bucket and an event key.
    a = make_event("r", "m", {"kind": "Pod", "namespace": "ab", "name": "c"})
    b = make_event("r", "m", {"kind": "Pod", "namespace": "a", "name": "bc"})
    assert get_spam_key(a) == get_spam_key(b)
    assert get_event_key(a) == get_event_key(b)
    # The field path is in the event key but not in the spam or aggregate keys.
    c = make_event("r", "m", {**object_reference("Pod", "p", "n"), "fieldPath": "x"})
    d = make_event("r", "m", {**object_reference("Pod", "p", "n"), "fieldPath": "y"})
    assert get_event_key(c) != get_event_key(d)
    assert get_spam_key(c) == get_spam_key(d)
    assert event_aggregator_by_reason(c) == event_aggregator_by_reason(d)


def test_a_filtered_repeat_still_counts() -> None:
    # The logger records before the spam filter decides (EventCorrelate's order), so the next
    # repeat that passes carries the count of every occurrence.
    clock = IntervalClock(1)
    # One token per 4 s; the clock reads: stamp, aggregator, filter (1 s each).
    correlator = EventCorrelator(CorrelatorOptions(clock=clock, burst_size=1, qps=0.25))
    event = make_event("r", "m", object_reference("Pod", "p", "n"))
    assert not correlator.correlate(_stamp(clock, event)).skip  # count 1, the token at t=3
    assert correlator.correlate(event).skip  # count 2 recorded; t=5: half a token
    result = correlator.correlate(_stamp(clock, event))  # t=8: 1.25 tokens
    assert not result.skip
    assert (result.event["count"], result.patch is not None) == (3, True)


def test_repeat_patch_carries_count_last_timestamp_and_message() -> None:
    clock = IntervalClock(5)
    correlator = EventCorrelator(clock=clock)
    event = make_event("r", "m", object_reference("Pod", "p", "n"))
    first = correlator.correlate(_stamp(clock, event))
    assert first.patch is None
    server = {**first.event, "metadata": {"name": "p.abc", "resourceVersion": "41"}}
    correlator.update_state(server)
    again = _stamp(clock, event)
    result = correlator.correlate(again)
    assert result.event["metadata"] == {"name": "p.abc", "resourceVersion": "41"}
    assert result.event["firstTimestamp"] == first.event["firstTimestamp"]
    assert result.patch == {"count": 2, "lastTimestamp": again["lastTimestamp"], "message": "m"}


def test_combined_event_is_a_fresh_event_without_reporting_fields() -> None:
    clock = IntervalClock(1)
    correlator = EventCorrelator(clock=clock)
    base = {
        **make_event("r", "x", object_reference("Pod", "p", "n")),
        "reportingComponent": "rc",
        "reportingInstance": "ri",
    }
    results = [correlator.correlate({**base, "message": f"m{i}"}) for i in range(10)]
    assert [r.aggregated for r in results] == [False] * 9 + [True]
    combined = results[-1].event
    assert combined["message"] == COMBINED_PREFIX + "m9"
    assert combined["metadata"]["name"].startswith("p.")
    assert "reportingComponent" not in combined and "reportingInstance" not in combined
    assert combined["firstTimestamp"] == combined["lastTimestamp"]


def test_caches_are_bounded_by_lru_cache_size() -> None:
    clock = IntervalClock(1)
    correlator = EventCorrelator(CorrelatorOptions(clock=clock, lru_cache_size=2, burst_size=1))
    events = [make_event("r", "m", object_reference("Pod", f"p{i}", "n")) for i in range(3)]
    for event in events:
        assert not correlator.correlate(event).skip
    # p0's bucket was evicted (3 objects, 2 entries): it starts full again.
    assert not correlator.correlate(events[0]).skip
    assert correlator.correlate(events[0]).skip
