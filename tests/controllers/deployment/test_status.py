"""The status checks that compare before building agree with the build, case by case.

``status_unchanged`` / ``rollout_status_unchanged`` answer "unchanged" instead of building a
status; they must say so exactly when the build would produce a status equal to the old one
(else a sync skips a status write, or builds for nothing). Every combination of the fields
they read is compared with the build.
"""

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
RECENT = "2023-11-14T22:10:00Z"  # 200 s before NOW
LONG_AGO = "2023-11-14T21:00:00Z"  # past a 600 s deadline


def _condition(type_: str, status: str, reason: str, stamp: str = RECENT) -> Obj:
    return {
        "type": type_,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": "m",
    }


def _rs(name: str, replicas: int, available: int, failure: bool) -> Obj:
    status: Obj = {"replicas": replicas, "readyReplicas": available, "availableReplicas": available}
    if failure:
        status["conditions"] = [
            _condition(util.REPLICA_FAILURE, "True", "FailedCreate", LONG_AGO),
        ]
    return {
        "metadata": {"name": name, "uid": f"{name}-uid"},
        "spec": {"replicas": replicas},
        "status": status,
    }


AVAILABLE = {
    "absent": None,
    "true": _condition(util.AVAILABLE, "True", util.MINIMUM_REPLICAS_AVAILABLE),
    "false": _condition(util.AVAILABLE, "False", util.MINIMUM_REPLICAS_UNAVAILABLE),
    "other-reason": _condition(util.AVAILABLE, "True", "Other"),
}
PROGRESSING = {
    "absent": None,
    "complete": _condition(util.PROGRESSING, "True", util.NEW_RS_AVAILABLE),
    "updated-recently": _condition(util.PROGRESSING, "True", util.RS_UPDATED),
    "updated-long-ago": _condition(util.PROGRESSING, "True", util.RS_UPDATED, LONG_AGO),
    "timed-out": _condition(util.PROGRESSING, "False", util.TIMED_OUT, LONG_AGO),
    "timed-out-true": _condition(util.PROGRESSING, "True", util.TIMED_OUT, LONG_AGO),
    "paused": _condition(util.PROGRESSING, "Unknown", util.PAUSED),
}
FAILURE = {
    "absent": None,
    "same": _condition(util.REPLICA_FAILURE, "True", "FailedCreate", LONG_AGO),
    "other-reason": _condition(util.REPLICA_FAILURE, "True", "Other", LONG_AGO),
}
EXTRA = {"none": {}, "set": {"terminatingReplicas": 1}, "zero": {"terminatingReplicas": 0}}


def _world(
    deadline: bool,
    available: str,
    progressing: str,
    failure: str,
    extra: str,
    drift: str,
    rs_shape: str,
) -> tuple[Obj, list[Obj | None], Obj]:
    new_rs = _rs("web-new", 3, 2 if rs_shape == "partial" else 3, rs_shape == "failing")
    all_rss: list[Obj | None] = [new_rs]
    if rs_shape == "two":
        all_rss.insert(0, _rs("web-old", 1, 1, False))
    spec: Obj = {
        "replicas": 3,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}},
    }
    if deadline:
        spec["progressDeadlineSeconds"] = 600
    deployment: Obj = {"metadata": {"name": "web", "generation": 2}, "spec": spec}
    status: Obj = {
        **replica_counts(all_rss, new_rs, deployment),
        **EXTRA[extra],
        "conditions": [
            c
            for c in (AVAILABLE[available], PROGRESSING[progressing], FAILURE[failure])
            if c is not None
        ],
    }
    if drift == "available":
        status["availableReplicas"] -= 1
    elif drift == "generation":
        status["observedGeneration"] = 1
    deployment["status"] = status
    return deployment, all_rss, new_rs


@pytest.mark.parametrize("rs_shape", ["settled", "partial", "failing", "two"])
@pytest.mark.parametrize("deadline", [True, False], ids=["deadline", "no-deadline"])
def test_compare_first_agrees_with_the_build(deadline: bool, rs_shape: str) -> None:
    unchanged = 0
    for available, progressing, failure, extra, drift in itertools.product(
        AVAILABLE, PROGRESSING, FAILURE, EXTRA, ("none", "available", "generation")
    ):
        case = (available, progressing, failure, extra, drift)
        deployment, all_rss, new_rs = _world(deadline, *case, rs_shape)
        old = deployment["status"]
        counts = replica_counts(all_rss, new_rs, deployment)
        equal = status_equal(old, rollout_status(all_rss, new_rs, deployment, NOW))
        assert rollout_status_unchanged(all_rss, new_rs, deployment, counts, NOW) is equal, case
        unchanged += equal
        basic = status_equal(old, calculate_status(all_rss, new_rs, deployment, NOW))
        assert status_unchanged(old, counts, deployment) is basic, case
    assert unchanged  # the table holds settled cases too


def test_the_settled_case_is_the_unchanged_one() -> None:
    deployment, all_rss, new_rs = _world(
        True, "true", "complete", "absent", "none", "none", "settled"
    )
    counts = replica_counts(all_rss, new_rs, deployment)
    assert rollout_status_unchanged(all_rss, new_rs, deployment, counts, NOW)
    assert status_unchanged(deployment["status"], counts, deployment)
