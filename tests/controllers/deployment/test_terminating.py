"""``status.terminatingReplicas`` on Deployments (gate ``DeploymentReplicaSetTerminatingReplicas``,
beta and on in KCM 1.35+): the sum over the ReplicaSets, unknown when one of them was observed
by a controller that does not report it; a pointer, so absent and 0 are different statuses."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from pycm.controllers.deployment import util
from pycm.controllers.deployment.progress import rollout_status, rollout_status_unchanged
from pycm.controllers.deployment.status import (
    calculate_status,
    replica_counts,
    status_equal,
    status_unchanged,
)

Obj = dict[str, Any]
NOW = 1_700_000_000.0


def _rs(name: str, spec: int, replicas: int, terminating: int | None, observed: int = 0) -> Obj:
    status: Obj = {"replicas": replicas}
    if observed:
        status["observedGeneration"] = observed
    if terminating is not None:
        status["terminatingReplicas"] = terminating
    return {"metadata": {"name": name}, "spec": {"replicas": spec}, "status": status}


# KCM's TestGetReplicaCountForReplicaSets (deployment_util_test.go), its ReplicaSets as written
# there — rs2 keeps observedGeneration 0 (the test sets rs1's twice) but reports the field.
RS1 = _rs("foo-rs", 1, 2, 3, observed=1)
RS2 = _rs("bar-rs", 2, 3, 1)
RS3 = _rs("unsynced-rs", 3, 0, None)
RS4 = _rs("dropped-rs", 1, 1, None, observed=1)


@pytest.mark.parametrize(
    ("sets", "count", "actual", "terminating"),
    [
        pytest.param([RS1], 1, 2, 3, id="scaling down rs1"),
        pytest.param([RS1, RS2], 3, 5, 4, id="scaling down rs1 and rs2"),
        pytest.param([RS3], 3, 0, 0, id="scaling up rs3"),
        pytest.param([RS1, RS2, RS3], 6, 5, 4, id="scaling down rs1 and rs2 and scaling up rs3"),
        pytest.param([RS4], 1, 1, None, id="invalid/unknown terminating status for rs4"),
        pytest.param(
            [RS1, RS2, RS3, RS4], 7, 6, None, id="unknown terminating status for rs4 with others"
        ),
        pytest.param([None, RS1], 1, 2, 3, id="no new replica set"),
    ],
)
def test_get_replica_count_for_replica_sets(
    sets: list[Obj | None], count: int, actual: int, terminating: int | None
) -> None:
    assert util.get_replica_count(sets) == count
    assert util.get_status_replica_count(sets) == actual
    assert util.get_terminating_replica_count(sets) == terminating


def _deployment(status: Obj) -> Obj:
    return {
        "metadata": {"name": "web", "generation": 1},
        "spec": {"replicas": 3, "strategy": {"type": "RollingUpdate"}},
        "status": status,
    }


@pytest.mark.parametrize("gate", [True, False])
def test_status_carries_the_sum_only_with_the_gate(gate: bool) -> None:
    rss = [RS1, RS2]
    status = calculate_status(rss, RS2, _deployment({}), NOW, terminating=gate)
    assert status.get("terminatingReplicas") == (4 if gate else None)
    assert (
        "terminatingReplicas" in replica_counts(rss, RS2, _deployment({}), terminating=gate)
    ) is (gate)


def test_unknown_sum_leaves_the_field_out() -> None:
    status = calculate_status([RS1, RS4], RS1, _deployment({}), NOW)
    assert "terminatingReplicas" not in status


def test_absent_and_zero_are_different_statuses() -> None:
    assert not status_equal({"replicas": 1}, {"replicas": 1, "terminatingReplicas": 0})
    assert not status_equal({"replicas": 1, "terminatingReplicas": 0}, {"replicas": 1})
    assert status_equal(
        {"replicas": 1, "terminatingReplicas": 2}, {"replicas": 1, "terminatingReplicas": 2}
    )
    assert status_equal({"replicas": 0}, {})  # the other counts: a missing field is 0


_OLD = {"absent": None, "zero": 0, "two": 2, "four": 4}
_RSS = {"sum-4": [RS1, RS2], "sum-0": [RS3], "unknown": [RS1, RS4]}


@pytest.mark.parametrize(
    ("old_name", "rss_name", "gate"),
    list(itertools.product(_OLD, _RSS, [True, False])),
)
def test_compare_first_agrees_with_the_build(old_name: str, rss_name: str, gate: bool) -> None:
    # The settled fast paths (status_unchanged, rollout_status_unchanged) must say "unchanged"
    # exactly when the build's status equals the old one — terminatingReplicas included.
    rss = _RSS[rss_name]
    new_rs = rss[0]
    base = calculate_status(rss, new_rs, _deployment({}), NOW, terminating=False)
    base.pop("terminatingReplicas", None)
    old = dict(base)
    if _OLD[old_name] is not None:
        old["terminatingReplicas"] = _OLD[old_name]
    deployment = _deployment(old)
    counts = replica_counts(rss, new_rs, deployment, terminating=gate)
    built = calculate_status(rss, new_rs, deployment, NOW, terminating=gate)
    assert status_unchanged(old, counts, deployment) is status_equal(old, built)
    rollout = rollout_status(rss, new_rs, deployment, NOW, terminating=gate)
    assert rollout_status_unchanged(rss, new_rs, deployment, counts, NOW) is status_equal(
        old, rollout
    )
