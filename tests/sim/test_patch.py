"""The three patch types, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.sim.errors import APIError
from pycm.sim.patch import json_patch, merge_patch, strategic_merge_patch

C = "containers"


@pytest.mark.parametrize(
    ("original", "patch", "want"),
    [
        pytest.param({"a": 1, "b": 2}, {"b": None}, {"a": 1}, id="null-deletes"),
        pytest.param({"a": {"x": 1}}, {"a": {"y": 2}}, {"a": {"x": 1, "y": 2}}, id="maps-merge"),
        pytest.param({"l": [1, 2]}, {"l": [3]}, {"l": [3]}, id="lists-replace"),
    ],
)
def test_merge_patch(original: Any, patch: Any, want: Any) -> None:
    assert merge_patch(original, patch) == want


@pytest.mark.parametrize(
    ("original", "patch", "want"),
    [
        pytest.param(
            {C: [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]},
            {C: [{"name": "b", "image": "2"}]},
            {C: [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]},
            id="merge-by-name",
        ),
        pytest.param(
            {C: [{"name": "a"}]},
            {C: [{"name": "new", "image": "x"}]},
            {C: [{"name": "a"}, {"name": "new", "image": "x"}]},
            id="append-new-key",
        ),
        pytest.param(
            {C: [{"name": "a"}, {"name": "b"}]},
            {C: [{"name": "a", "$patch": "delete"}]},
            {C: [{"name": "b"}]},
            id="delete-element",
        ),
        pytest.param(
            {C: [{"name": "a"}, {"name": "b"}]},
            {C: [{"name": "z"}, {"$patch": "replace"}]},
            {C: [{"name": "z"}]},
            id="replace-list",
        ),
        pytest.param(
            {"spec": {"a": 1, "b": 2}},
            {"spec": {"$patch": "replace", "c": 3}},
            {"spec": {"c": 3}},
            id="replace-map",
        ),
        pytest.param(
            {"spec": {"a": 1}, "k": 1}, {"spec": {"$patch": "delete"}}, {"k": 1}, id="delete-map"
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a", "b"]}},
            {"metadata": {"finalizers": ["c", "a"]}},
            {"metadata": {"finalizers": ["a", "b", "c"]}},
            id="primitive-union",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a", "b"]}},
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
            {"metadata": {"finalizers": ["b"]}},
            id="delete-from-primitive-list",
        ),
        pytest.param(
            {"args": ["x", "y"]}, {"args": ["z"]}, {"args": ["z"]}, id="unkeyed-list-replaces"
        ),
        pytest.param(
            {C: [{"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "1"}]}]},
            {C: [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]},
            {C: [{"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]},
            id="nested-env-by-name",
        ),
        pytest.param(
            {"a": 1},
            {"$setElementOrder/containers": [{"name": "a"}], "b": 2},
            {"a": 1, "b": 2},
            id="ignored-element-order",
        ),
        pytest.param(
            {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}},
            {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}},
            {"strategy": {"type": "Recreate"}},
            id="retain-keys",
        ),
    ],
)
def test_strategic_merge_patch(original: Any, patch: Any, want: Any) -> None:
    before = repr(original)
    assert strategic_merge_patch(original, patch) == want
    assert repr(original) == before  # never mutates its input


def test_strategic_merge_patch_element_without_merge_key_is_400() -> None:
    with pytest.raises(APIError) as err:
        strategic_merge_patch({C: []}, {C: [{"image": "x"}]})
    assert err.value.code == 400


@pytest.mark.parametrize(
    ("ops", "want"),
    [
        pytest.param([{"op": "add", "path": "/b", "value": 2}], {"a": [1, 2], "b": 2}, id="add"),
        pytest.param([{"op": "remove", "path": "/a/0"}], {"a": [2]}, id="remove-index"),
        pytest.param([{"op": "add", "path": "/a/-", "value": 3}], {"a": [1, 2, 3]}, id="append"),
        pytest.param([{"op": "replace", "path": "/a", "value": 0}], {"a": 0}, id="replace"),
        pytest.param([{"op": "move", "from": "/a", "path": "/c"}], {"c": [1, 2]}, id="move"),
        pytest.param(
            [{"op": "copy", "from": "/a/1", "path": "/d~1e"}],
            {"a": [1, 2], "d/e": 2},
            id="copy-escaped",
        ),
    ],
)
def test_json_patch(ops: list[dict[str, Any]], want: Any) -> None:
    assert json_patch({"a": [1, 2]}, ops) == want


@pytest.mark.parametrize(
    "ops",
    [
        pytest.param([{"op": "test", "path": "/a", "value": 9}], id="failed-test"),
        pytest.param([{"op": "remove", "path": "/missing"}], id="missing-path"),
        pytest.param([{"op": "replace", "path": "/a/5", "value": 1}], id="bad-index"),
    ],
)
def test_json_patch_failures_are_422(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(APIError) as err:
        json_patch({"a": [1, 2]}, ops)
    assert err.value.code == 422
