"""Metadata accessors, keys, times and owner references over plain dicts."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from pycm.api import meta
from pycm.api.owner import is_controlled_by, new_controller_ref

POD: dict[str, Any] = {
    "metadata": {
        "name": "web-1",
        "namespace": "default",
        "uid": "u-1",
        "resourceVersion": "42",
        "generation": 3,
        "labels": {"app": "web"},
        "annotations": {"note": "x"},
        "creationTimestamp": "2024-01-02T03:04:05Z",
        "ownerReferences": [
            {"kind": "ConfigMap", "name": "cm", "uid": "u-cm"},
            {"kind": "ReplicaSet", "name": "rs", "uid": "u-rs", "controller": True},
        ],
    }
}


def test_meta_accessors_read_fields() -> None:
    assert meta.name(POD) == "web-1"
    assert meta.namespace(POD) == "default"
    assert meta.uid(POD) == "u-1"
    assert meta.resource_version(POD) == "42"
    assert meta.generation(POD) == 3
    assert meta.labels(POD) == {"app": "web"}
    assert meta.annotations(POD) == {"note": "x"}
    assert len(meta.owner_references(POD)) == 2
    assert meta.creation_timestamp(POD) == dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert meta.deletion_timestamp(POD) is None


def test_meta_accessors_missing_metadata_read_zero_values() -> None:
    empty: dict[str, Any] = {}
    assert (meta.name(empty), meta.namespace(empty), meta.uid(empty)) == ("", "", "")
    assert meta.generation(empty) == 0
    assert meta.labels(empty) == {}
    assert meta.owner_references(empty) == []
    assert meta.controller_ref(empty) is None


def test_meta_controller_ref_picks_controller_true() -> None:
    ref = meta.controller_ref(POD)
    assert ref is not None
    assert ref["name"] == "rs"


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(POD, "default/web-1", id="namespaced"),
        pytest.param({"metadata": {"name": "node-1"}}, "node-1", id="cluster-scoped"),
    ],
)
def test_meta_key_formats_namespace_and_name(obj: dict[str, Any], want: str) -> None:
    assert meta.key(obj) == want


@pytest.mark.parametrize(
    ("k", "want"),
    [
        pytest.param("ns/name", ("ns", "name"), id="namespaced"),
        pytest.param("name", ("", "name"), id="cluster-scoped"),
        pytest.param("/name", ("", "name"), id="empty-namespace"),
    ],
)
def test_meta_split_key_splits(k: str, want: tuple[str, str]) -> None:
    assert meta.split_key(k) == want


@pytest.mark.parametrize("k", [pytest.param(k, id=k or "empty") for k in ["", "a/b/c", "ns/"]])
def test_meta_split_key_invalid_raises(k: str) -> None:
    with pytest.raises(ValueError, match="unexpected key format"):
        meta.split_key(k)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(
            "2024-01-02T03:04:05Z", dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC), id="z"
        ),
        pytest.param(
            "2024-01-02T05:04:05+02:00",
            dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
            id="offset",
        ),
        pytest.param(
            "2024-01-02T03:04:05.123456Z",
            dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC),
            id="micro",
        ),
    ],
)
def test_meta_parse_time_parses_rfc3339(text: str, want: dt.datetime) -> None:
    assert meta.parse_time(text) == want


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(t, id=t or "empty")
        for t in ["", "yesterday", "2024-01-02", "2024-01-02T03:04:05"]
    ],
)
def test_meta_parse_time_invalid_raises(text: str) -> None:
    with pytest.raises(ValueError, match="RFC 3339"):
        meta.parse_time(text)


def test_meta_format_time_seconds_and_micro() -> None:
    when = dt.datetime(2024, 1, 2, 5, 4, 5, 120000, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert meta.format_time(when) == "2024-01-02T03:04:05Z"
    assert meta.format_time(when, micro=True) == "2024-01-02T03:04:05.120000Z"


def test_meta_with_labels_returns_copy_and_leaves_original() -> None:
    before = copy.deepcopy(POD)
    changed = meta.with_labels(POD, {"app": "db"})
    assert meta.labels(changed) == {"app": "db"}
    assert POD == before


def test_owner_new_controller_ref_and_is_controlled_by() -> None:
    rs = {"metadata": {"name": "rs", "uid": "u-rs"}}
    ref = new_controller_ref(rs, "ReplicaSet", "apps/v1")
    assert ref == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "rs",
        "uid": "u-rs",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert is_controlled_by(POD, rs)
    assert not is_controlled_by(POD, {"metadata": {"name": "cm", "uid": "u-cm"}})
