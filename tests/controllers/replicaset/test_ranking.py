"""The ReplicaSet's deletion ranking, checked against KCM's own cases.

The tables are KCM's ``TestSortingActivePodsWithRanks`` (pkg/controller/controller_utils_test.go,
1.36: LogarithmicScaleDown locked on) and the rules of ``GetDeletionCostFromPodAnnotations``
(pkg/apis/core/helper); the pod names are KCM's.
"""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import pytest

from pycm.controllers.replicaset.ranking import (
    DELETION_COST_ANNOTATION,
    active_pods_less,
    deletion_age_ratios,
    deletion_cost,
    logarithmic_rank_diff,
    pods_to_delete,
    rank_by_related_pods_on_node,
)

Obj = dict[str, Any]
NOW = 1_700_000_000  # whole seconds: the objects carry seconds, as metav1.Time serializes
NOW_NS = NOW * 10**9
HOUR = 3600


def _ts(seconds_ago: int | None) -> str | None:
    if seconds_ago is None:
        return None
    return dt.datetime.fromtimestamp(NOW - seconds_ago, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(
    name: str,
    node: str,
    phase: str,
    ready: bool,
    restarts: int,
    ready_since: int | None,
    created: int | None,
    annotations: dict[str, str] | None = None,
    uid: str = "",
) -> Obj:
    """KCM's test helper: ``ready_since`` / ``created`` are seconds ago (None: Go's zero time);
    a pod that is not ready has no conditions and no container statuses."""
    meta: Obj = {"name": name}
    if uid:
        meta["uid"] = uid
    if created is not None:
        meta["creationTimestamp"] = _ts(created)
    if annotations:
        meta["annotations"] = annotations
    status: Obj = {"phase": phase}
    if ready:
        condition: Obj = {"type": "Ready", "status": "True"}
        if ready_since is not None:
            condition["lastTransitionTime"] = _ts(ready_since)
        status["conditions"] = [condition]
        status["containerStatuses"] = [{"restartCount": restarts}]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": status}


MONTH = 30 * 24 * HOUR
unscheduled = _pod("unscheduled", "", "Pending", False, 0, None, None)
scheduled_pending = _pod("pending", "node", "Pending", False, 0, None, None)
unknown_phase = _pod("unknown-phase", "node", "Unknown", False, 0, None, None)
running_not_ready = _pod("not-ready", "node", "Running", False, 0, None, None)
ready_no_transition = _pod("ready-no-last-transition-time", "node", "Running", True, 0, None, None)
ready_now = _pod("ready-now", "node", "Running", True, 0, 0, 0)
ready_then = _pod("ready-then", "node", "Running", True, 0, MONTH, MONTH)
ready_now_high_restarts = _pod("ready-high-restarts", "node", "Running", True, 9001, 0, 0)
ready_now_created_then = _pod("ready-now-created-then", "node", "Running", True, 0, 0, MONTH)
low_cost = _pod(
    "low-deletion-cost", "node", "Running", True, 0, 0, MONTH, {DELETION_COST_ANNOTATION: "10"}
)
high_cost = _pod(
    "high-deletion-cost", "node", "Running", True, 0, 0, MONTH, {DELETION_COST_ANNOTATION: "100"}
)
unscheduled_5h = _pod("unscheduled-5-hours", "", "Pending", False, 0, 5 * HOUR, 5 * HOUR)
unscheduled_8h = _pod("unscheduled-10-hours", "", "Pending", False, 0, 8 * HOUR, 8 * HOUR)
ready_2h = _pod("ready-2-hours", "", "Running", True, 0, 2 * HOUR, MONTH)
ready_5h = _pod("ready-5-hours", "", "Running", True, 0, 5 * HOUR, MONTH)
ready_8h = _pod("ready-10-hours", "", "Running", True, 0, 8 * HOUR, MONTH)


@pytest.mark.parametrize(
    ("p1", "p2"),
    [
        pytest.param(p1, p2 if p2 is not None else p1, id=f"{i}-{p1['metadata']['name']}")
        for i, (p1, p2) in enumerate(
            [
                (unscheduled, None),
                (scheduled_pending, None),
                (unknown_phase, None),
                (running_not_ready, None),
                (ready_now_created_then, None),
                (ready_now, None),
                (ready_then, None),
                (ready_now_high_restarts, None),
                (ready_now_created_then, None),
                # 5 h and 8 h ago fall in the same log2 bucket, and the UIDs are equal.
                (unscheduled_5h, unscheduled_8h),
                (ready_5h, ready_8h),
            ]
        )
    ],
)
def test_sorting_active_pods_with_ranks_equality(p1: Obj, p2: Obj) -> None:
    # KCM TestSortingActivePodsWithRanks, "Equality tests": ranks 1 and 1.
    assert not active_pods_less(p1, 1, p2, 1, NOW_NS)
    assert not active_pods_less(p2, 1, p1, 1, NOW_NS)


_INEQUALITY = [
    # (lesser, rank), (greater, rank), PodDeletionCost on
    ((unscheduled, 1), (scheduled_pending, 2), True),
    ((unscheduled, 2), (scheduled_pending, 1), True),
    ((scheduled_pending, 1), (unknown_phase, 2), True),
    ((unknown_phase, 1), (running_not_ready, 2), True),
    ((running_not_ready, 1), (ready_no_transition, 1), True),
    ((ready_no_transition, 1), (ready_now, 1), True),
    ((ready_now, 2), (ready_no_transition, 1), True),
    ((ready_now, 1), (ready_then, 1), True),
    ((ready_now, 2), (ready_then, 1), True),
    ((ready_now_high_restarts, 1), (ready_now, 1), True),
    ((ready_now, 2), (ready_now_high_restarts, 1), True),
    ((ready_now, 1), (ready_now_created_then, 1), True),
    ((ready_now_created_then, 2), (ready_now, 1), True),
    ((low_cost, 2), (high_cost, 1), True),
    ((high_cost, 2), (low_cost, 1), False),
    ((ready_2h, 1), (ready_5h, 1), True),
]


@pytest.mark.parametrize(
    ("lesser", "greater", "cost_gate"),
    [
        pytest.param(lesser, greater, gate, id=f"{i}-{lesser[0]['metadata']['name']}")
        for i, (lesser, greater, gate) in enumerate(_INEQUALITY)
    ],
)
def test_sorting_active_pods_with_ranks_inequality(
    lesser: tuple[Obj, int], greater: tuple[Obj, int], cost_gate: bool
) -> None:
    # KCM TestSortingActivePodsWithRanks, "Inequality tests".
    (p1, r1), (p2, r2) = lesser, greater
    assert active_pods_less(p1, r1, p2, r2, NOW_NS, pod_deletion_cost=cost_gate)
    assert not active_pods_less(p2, r2, p1, r1, NOW_NS, pod_deletion_cost=cost_gate)


def test_same_log2_bucket_is_decided_by_uid_before_restarts() -> None:
    # Rule 6 returns in the same bucket (rankDiff == 0 → UID), so rule 7 (restarts) never
    # sees two ready pods whose ready times differ but share a bucket.
    calm = _pod("calm", "node", "Running", True, 0, 5 * HOUR, MONTH, uid="a")
    crashy = _pod("crashy", "node", "Running", True, 50, 8 * HOUR, MONTH, uid="b")
    assert active_pods_less(calm, 1, crashy, 1, NOW_NS)
    assert not active_pods_less(crashy, 1, calm, 1, NOW_NS)
    # With equal ready times the restarts decide again.
    crashy_same = _pod("crashy", "node", "Running", True, 50, 5 * HOUR, MONTH, uid="b")
    assert active_pods_less(crashy_same, 1, calm, 1, NOW_NS)


def test_unset_times_go_first_and_a_zero_now_compares_the_times_themselves() -> None:
    # afterOrZero: a missing creation time counts as "after" (newest), so it is deleted first;
    # without Now (Go's zero time) the log2 buckets are off: 5 h is newer than 8 h.
    no_time = _pod("no-time", "", "Pending", False, 0, None, None)
    assert active_pods_less(no_time, 1, unscheduled_8h, 1, NOW_NS)
    assert not active_pods_less(unscheduled_8h, 1, no_time, 1, NOW_NS)
    assert active_pods_less(unscheduled_5h, 1, unscheduled_8h, 1, None)
    assert not active_pods_less(unscheduled_5h, 1, unscheduled_8h, 1, NOW_NS)


@pytest.mark.parametrize(
    ("age1_s", "age2_s", "diff"),
    [
        pytest.param(0, 1, -1 - 29, id="now-vs-1s"),  # 1 s = 1e9 ns: log2 = 29.9 → 29
        pytest.param(-5, 0, 0, id="future-and-now-both-minus-1"),
        pytest.param(2 * HOUR, 5 * HOUR, 42 - 44, id="2h-vs-5h"),
        pytest.param(5 * HOUR, 8 * HOUR, 0, id="5h-vs-8h"),
    ],
)
def test_logarithmic_rank_diff_buckets_nanosecond_ages(age1_s: int, age2_s: int, diff: int) -> None:
    t1, t2 = NOW_NS - age1_s * 10**9, NOW_NS - age2_s * 10**9
    assert logarithmic_rank_diff(t1, t2, NOW_NS) == diff


@pytest.mark.parametrize(
    ("value", "cost"),
    [
        pytest.param(None, 0, id="absent"),
        pytest.param("10", 10, id="positive"),
        pytest.param("-10", -10, id="negative"),
        pytest.param("0", 0, id="zero"),
        pytest.param("+10", 0, id="plus-sign"),
        pytest.param("008", 0, id="leading-zeros"),
        pytest.param("-08", -8, id="leading-zero-after-minus"),
        pytest.param("", 0, id="empty"),
        pytest.param("-", 0, id="minus-alone"),
        pytest.param("1_000", 0, id="underscore"),
        pytest.param(" 10", 0, id="space"),
        pytest.param("abc", 0, id="not-a-number"),
        pytest.param("2147483647", 2147483647, id="int32-max"),
        pytest.param("2147483648", 0, id="above-int32"),
        pytest.param("-2147483648", -2147483648, id="int32-min"),
    ],
)
def test_deletion_cost_parses_like_kcm(value: str | None, cost: int) -> None:
    annotations = {} if value is None else {DELETION_COST_ANNOTATION: value}
    assert deletion_cost({"metadata": {"annotations": annotations}}) == cost


def _names(pods: list[Obj]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_pods_to_delete_sorts_any_order_into_kcm_order() -> None:
    # KCM's getPodsToDelete over every permutation (sort.Sort is not stable; these pods are
    # strictly ordered, so any correct sort gives one answer).
    pods = [unscheduled, scheduled_pending, unknown_phase, running_not_ready, ready_now, ready_then]
    for order in itertools.permutations(pods):
        chosen = pods_to_delete(list(order), pods, 4, now_ns=NOW_NS)
        assert _names(chosen) == ["unscheduled", "pending", "unknown-phase", "not-ready"]


def test_pods_to_delete_prefers_doubled_up_nodes_and_skips_the_sort_when_all_go() -> None:
    a1 = _pod("a1", "node-a", "Running", True, 0, HOUR, MONTH, uid="1")
    a2 = _pod("a2", "node-a", "Running", True, 0, HOUR, MONTH, uid="2")
    b1 = _pod("b1", "node-b", "Running", True, 0, 0, 0, uid="3")
    # b1 is younger, but node-a holds two pods of the owner (rank 2): a pod there goes first.
    sibling_done = _pod("done", "node-b", "Succeeded", False, 0, None, None)
    assert rank_by_related_pods_on_node([a1, a2, b1], [a1, a2, b1, sibling_done]) == [2, 2, 1]
    (chosen,) = pods_to_delete([b1, a2, a1], [a1, a2, b1], 1, now_ns=NOW_NS)
    assert chosen["spec"]["nodeName"] == "node-a"  # a1 and a2 rank equal: either may go
    assert _names(pods_to_delete([b1, a2, a1], [a1, a2, b1], 3, now_ns=NOW_NS)) == [
        "b1",
        "a2",
        "a1",
    ]


def test_deletion_age_ratios_divide_whole_milliseconds_by_the_youngest_ready_age() -> None:
    # KCM's reportSortingDeletionAgeRatioMetric: Ready pods only; the youngest Ready pod's age
    # is the divisor; Go divides the millisecond ages as integers (2.5 h / 1 h → 2.0).
    young = _pod("young", "n", "Running", True, 0, HOUR, HOUR)
    older = _pod("older", "n", "Running", True, 0, HOUR, 5 * HOUR // 2)
    not_ready = _pod("not-ready", "n", "Running", False, 0, None, 10)  # younger, not Ready
    oldest = _pod("oldest", "n", "Running", True, 0, HOUR, 4 * HOUR)
    filtered = [young, older, not_ready, oldest]
    assert deletion_age_ratios(filtered, [not_ready, older, oldest], NOW_NS) == [2.0, 4.0]
    # A youngest Ready pod created this very millisecond: KCM divides by zero; pycm skips.
    fresh = _pod("fresh", "n", "Running", True, 0, 0, 0)
    assert deletion_age_ratios([fresh, oldest], [oldest], NOW_NS) == []
