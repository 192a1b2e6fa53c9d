"""changed_paths: an update's changed field paths, never values, bounded."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.api.diff import changed_paths


def _d(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "metadata": {
            "name": "web",
            "resourceVersion": "1",
            "labels": {"app": "web"},
            "annotations": {"deployment.kubernetes.io/revision": "1"},
            "managedFields": [{"manager": "a"}],
        },
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"image": "nginx:1"}]}}},
        "status": {"readyReplicas": 1, "conditions": [{"type": "Available"}]},
    }
    for path, value in over.items():
        node = base
        *parents, last = path.split("__")
        for p in parents:
            node = node[p]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return base


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param({"spec__replicas": 3}, "spec.replicas", id="scale"),
        pytest.param({"status__readyReplicas": 2}, "status.readyReplicas", id="status"),
        pytest.param(
            {"metadata__annotations": {"deployment.kubernetes.io/revision": "2"}},
            'metadata.annotations["deployment.kubernetes.io/revision"]',
            id="annotation-in-brackets",
        ),
        pytest.param({"metadata__labels": {"app": "api"}}, "metadata.labels.app", id="label"),
        pytest.param(
            {"spec__template": {"spec": {"containers": [{"image": "nginx:2"}]}}},
            "spec.template.spec",
            id="depth-bounded",
        ),
        pytest.param(
            {"status__conditions": [{"type": "Progressing"}]}, "status.conditions", id="list"
        ),
        pytest.param({"status__readyReplicas": None}, "status.readyReplicas", id="removed"),
        pytest.param(
            {"metadata__resourceVersion": "9", "metadata__managedFields": []}, "", id="ignored"
        ),
        pytest.param({}, "", id="unchanged"),
    ],
)
def test_changed_paths_names_the_paths_that_differ(change: dict[str, Any], expected: str) -> None:
    assert changed_paths(_d(), _d(**change)) == expected


def test_changed_paths_never_carries_values() -> None:
    paths = changed_paths(_d(), _d(spec__replicas=31337, metadata__labels={"secret": "hunter2"}))
    assert "31337" not in paths and "hunter2" not in paths
    assert paths == "metadata.labels.secret,metadata.labels.app,spec.replicas"


def test_changed_paths_is_bounded() -> None:
    old = {"spec": {f"f{i}": 0 for i in range(30)}}
    new = {"spec": {f"f{i}": 1 for i in range(30)}}
    paths = changed_paths(old, new, limit=4).split(",")
    assert paths == ["spec.f0", "spec.f1", "spec.f2", "spec.f3", "…"]
    assert changed_paths(None, new) == ""
