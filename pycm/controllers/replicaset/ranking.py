"""Which pods a ReplicaSet deletes first when it scales down: KCM 1.36's ranking.

KCM's ``ActivePodsWithRanks.Less`` (pkg/controller/controller_utils.go) with the rules of
``getPodsToDelete`` / ``getPodsRankedByRelatedPodsOnSameNode`` (replica_set.go). Each rule
decides only when the two pods differ in it; the first rule that decides wins:

1. unassigned (no ``spec.nodeName``) before assigned;
2. Pending before Unknown before Running (any other phase counts as Pending);
3. not Ready before Ready;
4. lower ``controller.kubernetes.io/pod-deletion-cost`` first (gate ``PodDeletionCost``, beta
   and on; a missing or malformed annotation counts as 0);
5. higher rank first — the rank is the number of active pods of the same owner(s) on the pod's
   node, so doubled-up nodes lose pods first;
6. both Ready with different ready times: a missing ready time first, else the times compared
   in log2 buckets of their age (``LogarithmicScaleDown``, GA and locked since 1.31) — the
   younger bucket first; **in the same bucket the lower UID goes first and the later rules are
   not consulted**;
7. more container restarts first;
8. different creation times: a missing one first, else log2 buckets again (same bucket: lower
   UID first).

Ages are nanoseconds (Go's ``time.Duration``) floored to ``int(log2(age))``; an age ≤ 0 — a
time at or after ``now`` — is bucket -1. Times compare at the precision the objects carry.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pycm.api.meta import parse_time
from pycm.controllers.replicaset.pods import is_pod_active, is_pod_ready

__all__ = [
    "DELETION_COST_ANNOTATION",
    "active_pods_less",
    "deletion_age_ratios",
    "deletion_cost",
    "logarithmic_rank_diff",
    "pods_to_delete",
    "rank_by_related_pods_on_node",
]

Obj = Mapping[str, Any]

DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
# Go's map lookup of a phase not in podPhaseToOrdinal yields 0 (as Pending).
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_SIGNED_DIGITS = re.compile(r"-?[0-9]+")
_INT32 = range(-(2**31), 2**31)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def deletion_cost(pod: Obj) -> int:
    """The pod-deletion-cost annotation as KCM reads it (GetDeletionCostFromPodAnnotations):
    a base-10 int32 whose first character is ``-`` or a digit, no leading zeros ("0" itself
    allowed), no ``+``; anything else counts as 0."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(DELETION_COST_ANNOTATION)
    if not isinstance(value, str) or not value:
        return 0
    first = value[0]
    if not (first == "-" or value == "0" or "1" <= first <= "9"):
        return 0
    if _SIGNED_DIGITS.fullmatch(value) is None:
        return 0
    cost = int(value)
    return cost if cost in _INT32 else 0


def _time_ns(stamp: object) -> int | None:
    """An RFC 3339 time in Unix nanoseconds; None for a missing or unreadable one (Go's zero
    time)."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        when = parse_time(stamp)
    except ValueError:
        return None
    return (when - _EPOCH) // dt.timedelta(microseconds=1) * 1000


def _ready_time_ns(pod: Obj) -> int | None:
    """The Ready=True condition's lastTransitionTime (podReadyTime); None when there is none."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return _time_ns(condition.get("lastTransitionTime"))
    return None


def _created_ns(pod: Obj) -> int | None:
    return _time_ns((pod.get("metadata") or {}).get("creationTimestamp"))


def _max_restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def _uid(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def _after_or_zero(t1: int | None, t2: int | None) -> bool:
    """t1 after t2, a missing time counting as after any present one (afterOrZero)."""
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def logarithmic_rank_diff(t1_ns: int, t2_ns: int, now_ns: int) -> int:
    """floor(log2(age1)) − floor(log2(age2)), ages in nanoseconds, an age ≤ 0 ranking -1.
    Go converts the age to float64 before its Log2, so this does too."""
    d1, d2 = now_ns - t1_ns, now_ns - t2_ns
    r1 = int(math.log2(float(d1))) if d1 > 0 else -1
    r2 = int(math.log2(float(d2))) if d2 > 0 else -1
    return r1 - r2


def _compare_times(
    t1: int | None, t2: int | None, now_ns: int | None, uid1: str, uid2: str
) -> bool:
    """Rules 6 and 8 for two different times: is the first pod less?"""
    if now_ns is None or t1 is None or t2 is None:
        return _after_or_zero(t1, t2)
    diff = logarithmic_rank_diff(t1, t2, now_ns)
    if diff == 0:
        return uid1 < uid2
    return diff < 0


def active_pods_less(
    p1: Obj,
    rank1: int,
    p2: Obj,
    rank2: int,
    now_ns: int | None,
    *,
    pod_deletion_cost: bool = True,
) -> bool:
    """Whether ``p1`` (with ``rank1``) is deleted before ``p2`` (ActivePodsWithRanks.Less).
    ``now_ns`` is the wall time of the ranking (None: Go's zero ``Now``, which turns the log2
    buckets off and compares the times themselves)."""
    node1 = (p1.get("spec") or {}).get("nodeName") or ""
    node2 = (p2.get("spec") or {}).get("nodeName") or ""
    if node1 != node2 and (not node1 or not node2):
        return not node1
    phase1 = _PHASE_ORDINAL.get((p1.get("status") or {}).get("phase") or "", 0)
    phase2 = _PHASE_ORDINAL.get((p2.get("status") or {}).get("phase") or "", 0)
    if phase1 != phase2:
        return phase1 < phase2
    ready1, ready2 = is_pod_ready(p1), is_pod_ready(p2)
    if ready1 != ready2:
        return not ready1
    if pod_deletion_cost:
        cost1, cost2 = deletion_cost(p1), deletion_cost(p2)
        if cost1 != cost2:
            return cost1 < cost2
    if rank1 != rank2:
        return rank1 > rank2
    if ready1 and ready2:
        since1, since2 = _ready_time_ns(p1), _ready_time_ns(p2)
        if since1 != since2:
            return _compare_times(since1, since2, now_ns, _uid(p1), _uid(p2))
    restarts1, restarts2 = _max_restarts(p1), _max_restarts(p2)
    if restarts1 != restarts2:
        return restarts1 > restarts2
    created1, created2 = _created_ns(p1), _created_ns(p2)
    if created1 != created2:
        return _compare_times(created1, created2, now_ns, _uid(p1), _uid(p2))
    return False


def rank_by_related_pods_on_node(pods: Sequence[Obj], related: Sequence[Obj]) -> list[int]:
    """Each pod's rank: the active pods of ``related`` on its node (unassigned pods share the
    node "") — getPodsRankedByRelatedPodsOnSameNode."""
    on_node: dict[str, int] = {}
    for pod in related:
        if is_pod_active(pod):
            node = (pod.get("spec") or {}).get("nodeName") or ""
            on_node[node] = on_node.get(node, 0) + 1
    return [on_node.get((p.get("spec") or {}).get("nodeName") or "", 0) for p in pods]


def pods_to_delete(
    filtered: Sequence[Obj],
    related: Sequence[Obj],
    diff: int,
    *,
    now_ns: int | None,
    pod_deletion_cost: bool = True,
) -> list[Obj]:
    """The ``diff`` pods of ``filtered`` to delete (getPodsToDelete): all of them when ``diff``
    covers them (no sort), else the first ``diff`` by :func:`active_pods_less`."""
    if diff >= len(filtered):
        return list(filtered)
    ranks = rank_by_related_pods_on_node(filtered, related)

    def compare(a: tuple[Obj, int], b: tuple[Obj, int]) -> int:
        if active_pods_less(a[0], a[1], b[0], b[1], now_ns, pod_deletion_cost=pod_deletion_cost):
            return -1
        if active_pods_less(b[0], b[1], a[0], a[1], now_ns, pod_deletion_cost=pod_deletion_cost):
            return 1
        return 0

    ranked = sorted(zip(filtered, ranks, strict=True), key=functools.cmp_to_key(compare))
    return [pod for pod, _ in ranked[:diff]]


# Go's time.Sub saturates at the largest Duration: the "age" of a zero creation time.
_MAX_DURATION_NS = 2**63 - 1


def _age_ms(now_ns: int, created: int | None) -> int:
    """Go's ``now.Sub(t).Milliseconds()``: truncated toward zero, saturated for a zero time."""
    age_ns = _MAX_DURATION_NS if created is None else now_ns - created
    return _trunc_div(max(-_MAX_DURATION_NS - 1, min(_MAX_DURATION_NS, age_ns)), 10**6)


def _trunc_div(a: int, b: int) -> int:
    """Go's integer division: the quotient truncated toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def deletion_age_ratios(filtered: Sequence[Obj], chosen: Sequence[Obj], now_ns: int) -> list[float]:
    """What KCM's reportSortingDeletionAgeRatioMetric observes after a sorted scale-down: for
    each Ready pod chosen, its age in milliseconds divided — as integers, truncating — by the
    youngest Ready pod's age. KCM panics on a youngest age under 1 ms (an integer division by
    zero); pycm observes nothing then."""
    youngest: int | None = None
    for pod in filtered:
        created = _created_ns(pod)
        if is_pod_ready(pod) and created is not None and (youngest is None or created > youngest):
            youngest = created
    youngest_ms = _age_ms(now_ns, youngest)
    if youngest_ms == 0:
        return []
    ratios = []
    for pod in chosen:
        if is_pod_ready(pod):
            ratios.append(float(_trunc_div(_age_ms(now_ns, _created_ns(pod)), youngest_ms)))
    return ratios
