"""Table tests of the rollout maths, written from KCM's documented behaviour."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pycm.controllers.deployment import util

Obj = dict[str, Any]


def _d(
    replicas: int = 10,
    surge: int | str | None = "25%",
    unavailable: int | str | None = "25%",
    strategy: str = "RollingUpdate",
    status_replicas: int = 0,
    generation: int = 1,
    **status: Any,
) -> Obj:
    spec: Obj = {"replicas": replicas, "strategy": {"type": strategy}}
    if strategy == "RollingUpdate":
        spec["strategy"]["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    spec["template"] = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}
    return {
        "metadata": {"name": "web", "generation": generation},
        "spec": spec,
        "status": {"replicas": status_replicas, **status},
    }


def _rs(
    replicas: int,
    *,
    max_replicas: int | None = None,
    desired: int | None = None,
    available: int = 0,
    name: str = "rs",
    created: str = "2024-01-01T00:00:00Z",
) -> Obj:
    annotations = {}
    if max_replicas is not None:
        annotations[util.MAX_REPLICAS_ANNOTATION] = str(max_replicas)
    if desired is not None:
        annotations[util.DESIRED_REPLICAS_ANNOTATION] = str(desired)
    return {
        "metadata": {
            "name": name,
            "uid": f"{name}-uid",
            "annotations": annotations,
            "creationTimestamp": created,
        },
        "spec": {
            "replicas": replicas,
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}},
        },
        "status": {"availableReplicas": available, "replicas": replicas},
    }


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        pytest.param("25%", "25%", 10, (3, 2), id="percent-surge-up-unavailable-down"),
        pytest.param("25%", "25%", 1, (1, 0), id="one-replica"),
        pytest.param(0, 0, 5, (0, 1), id="both-zero-unavailable-one"),
        pytest.param("0%", "0%", 5, (0, 1), id="both-zero-percent"),
        pytest.param("1%", "1%", 10, (1, 0), id="tiny-percent"),
        pytest.param(2, 1, 10, (2, 1), id="absolute"),
        pytest.param("50%", "50%", 3, (2, 1), id="odd-halves"),
        pytest.param(None, None, 4, (1, 1), id="defaults-25"),
        pytest.param("100%", "0", 7, (7, 0), id="string-int"),
    ],
)
def test_resolve_fenceposts(
    surge: Any, unavailable: Any, desired: int, expected: tuple[int, int]
) -> None:
    assert util.resolve_fenceposts(surge, unavailable, desired) == expected


def test_int_or_percent_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        util.int_or_percent("ten%", 10, True)
    with pytest.raises(ValueError):
        util.int_or_percent("abc", 10, True)


@pytest.mark.parametrize(
    ("deployment", "surge", "unavailable", "minimum"),
    [
        pytest.param(_d(10), 3, 2, 8, id="rolling"),
        pytest.param(_d(10, strategy="Recreate"), 0, 0, 0, id="recreate"),
        pytest.param(_d(0), 0, 0, 0, id="zero-replicas"),
        pytest.param(_d(3, surge=0, unavailable=5), 0, 3, 0, id="unavailable-capped"),
    ],
)
def test_max_surge_max_unavailable_min_available(
    deployment: Obj, surge: int, unavailable: int, minimum: int
) -> None:
    assert util.max_surge(deployment) == surge
    assert util.max_unavailable(deployment) == unavailable
    assert util.min_available(deployment) == minimum


@pytest.mark.parametrize(
    ("deployment", "old", "new", "expected"),
    [
        pytest.param(_d(10), [10], 0, 3, id="surge-room"),
        pytest.param(_d(10), [10], 3, 3, id="at-cap-unchanged"),
        pytest.param(_d(10), [5], 5, 8, id="room-beyond-surge"),
        pytest.param(_d(10), [], 8, 10, id="capped-at-replicas"),
        pytest.param(_d(10, surge=0, unavailable=1), [10], 0, 0, id="zero-surge"),
        pytest.param(_d(10, strategy="Recreate"), [0], 0, 10, id="recreate-all-at-once"),
    ],
)
def test_new_rs_new_replicas(deployment: Obj, old: list[int], new: int, expected: int) -> None:
    new_rs = _rs(new, name="new")
    all_rss = [*(_rs(n, name=f"old{i}") for i, n in enumerate(old)), new_rs]
    assert util.new_rs_new_replicas(deployment, all_rss, new_rs) == expected


def test_new_rs_new_replicas_counts_pods_an_old_rs_has_not_deleted_yet() -> None:
    # 10 replicas, maxSurge 2: the old RS was scaled 9 → 8, its ReplicaSet controller has not
    # deleted the pod yet (status.replicas 9): 9 + 3 pods exist, no room to scale up (KCM's
    # Σ spec = 11 would make a 13th pod).
    d = _d(10, surge=2, unavailable=1)
    old, new_rs = _rs(8, name="old"), _rs(3, name="new")
    old["status"]["replicas"] = 9
    assert util.new_rs_new_replicas(d, [old, new_rs], new_rs) == 3
    old["status"]["replicas"] = 8  # deleted: room for one more
    assert util.new_rs_new_replicas(d, [old, new_rs], new_rs) == 4


@pytest.mark.parametrize(
    ("rs", "deployment", "expected"),
    [
        pytest.param(_rs(5, max_replicas=13), _d(20, status_replicas=13), 5, id="scale-up"),
        pytest.param(_rs(5, max_replicas=13), _d(5, status_replicas=13), -2, id="scale-down"),
        pytest.param(_rs(3, max_replicas=10), _d(0), -3, id="to-zero"),
        pytest.param(
            _rs(2, max_replicas=4), _d(3, surge=0, unavailable=1), -0, id="half-rounds-away"
        ),
        pytest.param(
            _rs(1, max_replicas=4), _d(10, surge=0, unavailable=1), 2, id="2.5-rounds-to-3"
        ),
        pytest.param(_rs(4), _d(20, status_replicas=8), 9, id="no-annotation-uses-status"),
        pytest.param(_rs(4), _d(20, status_replicas=0), 0, id="no-size-known"),
    ],
)
def test_get_replica_set_fraction(rs: Obj, deployment: Obj, expected: int) -> None:
    assert util.get_replica_set_fraction(rs, deployment) == expected


def test_round_half_away_from_zero() -> None:
    assert [util.round_half_away(x) for x in (0.5, 1.5, 2.5, -0.5, -2.5, 2.4)] == [
        1,
        2,
        3,
        -1,
        -3,
        2,
    ]


@pytest.mark.parametrize(
    ("rs", "expected"),
    [
        pytest.param(_rs(10, desired=10, available=10), True, id="saturated"),
        pytest.param(_rs(10, desired=10, available=9), False, id="not-all-available"),
        pytest.param(_rs(10, desired=9, available=10), False, id="desired-differs"),
        pytest.param(_rs(10, available=10), False, id="no-annotation"),
        pytest.param(None, False, id="no-rs"),
    ],
)
def test_is_saturated(rs: Obj | None, expected: bool) -> None:
    assert util.is_saturated(_d(10), rs) is expected


def test_equal_ignore_hash_ignores_only_the_hash_label() -> None:
    a = {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}}, "spec": {"x": 1}}
    b = {"metadata": {"labels": {"app": "web"}}, "spec": {"x": 1}}
    c = {"metadata": {"labels": {"app": "web"}}, "spec": {"x": 2}}
    assert util.equal_ignore_hash(a, b)
    assert not util.equal_ignore_hash(a, c)
    assert a["metadata"]["labels"]["pod-template-hash"] == "abc"  # inputs untouched


_SPEC = {"containers": [{"name": "c", "image": "nginx"}]}


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        pytest.param(
            {"metadata": {"labels": {"pod-template-hash": "abc"}}, "spec": _SPEC},
            {"spec": _SPEC},
            True,
            id="hash-only-labels-vs-no-metadata",
        ),
        pytest.param(
            {"metadata": {"labels": {}}, "spec": _SPEC},
            {"metadata": {}, "spec": _SPEC},
            True,
            id="empty-labels-vs-empty-metadata",
        ),
        pytest.param(
            {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"}}, "spec": _SPEC},
            {"metadata": {"labels": {"app": "web", "pod-template-hash": "x"}}, "spec": _SPEC},
            False,
            id="annotations-differ",
        ),
        pytest.param(
            {"metadata": {"labels": {"app": "web", "pod-template-hash": "x"}}, "spec": _SPEC},
            {"metadata": {"labels": {"app": "api", "pod-template-hash": "x"}}, "spec": _SPEC},
            False,
            id="other-label-differs",
        ),
        pytest.param({"spec": _SPEC}, {"spec": _SPEC, "extra": 1}, False, id="extra-field"),
        pytest.param(None, {}, True, id="none-is-empty"),
        pytest.param(
            {"spec": {"containers": [{"name": "c", "image": "nginx"}]}},
            {"spec": {"containers": [{"name": "c", "image": "httpd"}]}},
            False,
            id="nested-spec-differs",
        ),
    ],
)
def test_equal_ignore_hash_table(a: Obj | None, b: Obj | None, equal: bool) -> None:
    before = copy.deepcopy((a, b))
    assert util.equal_ignore_hash(a, b) is equal
    assert util.equal_ignore_hash(b, a) is equal
    assert (a, b) == before  # compared in place, never changed


def test_compute_hash_is_stable_and_changes_with_collisions() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}
    first = util.compute_hash(template, None)
    assert first == util.compute_hash(dict(template), 0)
    assert first != util.compute_hash(template, 1)
    assert set(first) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_deployment_complete_and_progressing() -> None:
    d = _d(3, generation=2, updatedReplicas=1, readyReplicas=1, availableReplicas=1)
    done = {"replicas": 3, "updatedReplicas": 3, "availableReplicas": 3, "observedGeneration": 2}
    assert util.deployment_complete(d, done)
    assert not util.deployment_complete(d, {**done, "observedGeneration": 1})
    assert not util.deployment_complete(d, {**done, "replicas": 4})
    assert util.deployment_progressing(d, {"updatedReplicas": 2})
    same = {"replicas": 0, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}
    assert not util.deployment_progressing(d, same)


@pytest.mark.parametrize(
    ("reason", "updated", "deadline", "now", "expected"),
    [
        pytest.param(
            util.RS_UPDATED, "2024-01-01T00:00:00Z", 600, 1704067200 + 601, True, id="past"
        ),
        pytest.param(
            util.RS_UPDATED, "2024-01-01T00:00:00Z", 600, 1704067200 + 600, False, id="at"
        ),
        pytest.param(
            util.NEW_RS_AVAILABLE,
            "2024-01-01T00:00:00Z",
            600,
            1704067200 + 9999,
            False,
            id="complete-never-times-out",
        ),
        pytest.param(util.TIMED_OUT, "2024-01-01T00:00:00Z", 600, 1704067200, True, id="already"),
        pytest.param(
            util.RS_UPDATED,
            "2024-01-01T00:00:00Z",
            None,
            1704067200 + 9999,
            False,
            id="no-deadline",
        ),
    ],
)
def test_deployment_timed_out(
    reason: str, updated: str, deadline: int | None, now: float, expected: bool
) -> None:
    d = _d(3)
    if deadline is not None:
        d["spec"]["progressDeadlineSeconds"] = deadline
    status = {
        "conditions": [
            {"type": "Progressing", "status": "True", "reason": reason, "lastUpdateTime": updated}
        ]
    }
    assert util.deployment_timed_out(d, status, now) is expected


def test_set_condition_keeps_transition_time_for_the_same_status() -> None:
    status: Obj = {}
    util.set_condition(
        status, util.new_condition("Progressing", "True", util.NEW_RS_CREATED, "a", 100)
    )
    first = dict(status["conditions"][0])
    util.set_condition(
        status, util.new_condition("Progressing", "True", util.NEW_RS_CREATED, "b", 200)
    )
    assert status["conditions"][0] == first  # same status and reason: unchanged
    util.set_condition(status, util.new_condition("Progressing", "True", util.RS_UPDATED, "c", 300))
    (cond,) = status["conditions"]
    assert (cond["reason"], cond["lastTransitionTime"]) == (
        util.RS_UPDATED,
        first["lastTransitionTime"],
    )
    assert cond["lastUpdateTime"] != first["lastUpdateTime"]
    util.set_condition(status, util.new_condition("Progressing", "False", util.TIMED_OUT, "d", 400))
    assert status["conditions"][0]["lastTransitionTime"] != first["lastTransitionTime"]


def test_find_new_and_old_replica_sets() -> None:
    d = _d(3)
    matching_new = _rs(1, name="b-new", created="2024-01-03T00:00:00Z")
    matching_old = _rs(1, name="a-first", created="2024-01-02T00:00:00Z")
    other = _rs(2, name="other", created="2024-01-01T00:00:00Z")
    other["spec"]["template"] = {"metadata": {"labels": {"app": "old"}}}
    empty = _rs(0, name="empty")
    empty["spec"]["template"] = {"metadata": {"labels": {"app": "older"}}}
    rss = [matching_new, other, matching_old, empty]
    assert util.find_new_replica_set(d, rss) is matching_old  # the oldest match wins
    requiring, all_old = util.find_old_replica_sets(d, rss)
    assert [r["metadata"]["name"] for r in requiring] == ["b-new", "other"]
    assert {r["metadata"]["name"] for r in all_old} == {"b-new", "other", "empty"}


def _reference_equal_ignore_hash(a: Obj | None, b: Obj | None) -> bool:
    """EqualIgnoreHash as KCM writes it: deep copies, the hash label deleted from both, then
    a semantic deep equality (an empty map equals a missing one)."""
    copies = [copy.deepcopy(t or {}) for t in (a, b)]
    for template in copies:
        meta = template.get("metadata")
        if isinstance(meta, dict):
            labels = meta.get("labels")
            if isinstance(labels, dict):
                labels.pop(util.POD_TEMPLATE_HASH_LABEL, None)
                if not labels:
                    del meta["labels"]
            if not meta:
                del template["metadata"]
    return bool(copies[0] == copies[1])


_ABSENT_META = object()
_METADATA: list[Any] = [
    _ABSENT_META,
    None,
    {},
    {"labels": {}},
    {"labels": None},
    {"labels": {"pod-template-hash": "x"}},
    {"labels": {"app": "web"}},
    {"labels": {"app": "web", "pod-template-hash": "x"}},
    {"labels": {"app": "web", "pod-template-hash": "y"}},
    {"labels": {"app": "api", "pod-template-hash": "x"}},
    {"labels": {"app": "web", "tier": "front"}},
    {"labels": {"tier": "front", "pod-template-hash": "x"}},
    {"labels": {"app": "web"}, "annotations": {"a": "1"}},
    {"labels": {"app": "web", "pod-template-hash": "x"}, "annotations": {"a": "1"}},
    {"labels": {"pod-template-hash": "x"}, "annotations": {"a": "1"}},
    {"annotations": {"a": "1"}},
    {"annotations": {"a": "2"}, "labels": {"app": "web"}},
    {"name": "x", "labels": {"app": "web"}},
]
_SPECS: list[Any] = [_ABSENT_META, _SPEC, {"containers": [{"name": "c", "image": "other"}]}]


def _template(meta: Any, spec: Any) -> Obj:
    template: Obj = {}
    if meta is not _ABSENT_META:
        template["metadata"] = copy.deepcopy(meta)
    if spec is not _ABSENT_META:
        template["spec"] = copy.deepcopy(spec)
    return template


def test_equal_ignore_hash_agrees_with_the_copying_definition() -> None:
    templates = [_template(m, s) for m in _METADATA for s in _SPECS]
    templates.append({"metadata": {"labels": {"app": "web"}}, "spec": _SPEC, "extra": 1})
    equal_pairs = 0
    for a in templates:
        for b in templates:
            expected = _reference_equal_ignore_hash(a, b)
            assert util.equal_ignore_hash(a, b) is expected, (a, b)
            equal_pairs += expected
    assert equal_pairs > len(templates)  # the table holds equal pairs beyond a == a
