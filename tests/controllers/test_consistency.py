"""The staleness guard's store (KEP-5647's ConsistencyStore) and its version comparison."""

from __future__ import annotations

import pytest

from pycm.controllers.consistency import ConsistencyStore, StaleCache, compare_resource_versions


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        pytest.param("9", "10", -1, id="shorter-is-older"),
        pytest.param("10", "9", 1, id="longer-is-newer"),
        pytest.param("123", "123", 0, id="equal"),
        pytest.param("120", "119", 1, id="same-length-by-digits"),
        pytest.param("0", "1", -1, id="zero"),
    ],
)
def test_compare_resource_versions_orders_decimal_numbers(a: str, b: str, want: int) -> None:
    assert compare_resource_versions(a, b) == want


@pytest.mark.parametrize("bad", ["", "01", "-1", "1e3", "abc", "１２"])
def test_compare_resource_versions_refuses_what_is_not_a_version(bad: str) -> None:
    with pytest.raises(ValueError, match="cannot be compared"):
        compare_resource_versions(bad, "5")


def test_store_holds_a_sync_until_the_cache_reaches_the_newest_write() -> None:
    seen = {"pods": "5"}
    store = ConsistencyStore({"pods": lambda: seen["pods"]})
    store.wrote_at("ns/web", "u1", "pods", "12")
    store.wrote_at("ns/web", "u1", "pods", "9")  # older than kept: ignored
    with pytest.raises(StaleCache) as stale:
        store.ensure_ready("ns/web")
    assert str(stale.value) == "read version 5 is not as new as written version 12 for pods"
    seen["pods"] = "11"
    with pytest.raises(StaleCache):
        store.ensure_ready("ns/web")
    seen["pods"] = "12"
    store.ensure_ready("ns/web")
    assert len(store) == 0  # caught up: the record is dropped
    store.ensure_ready("other")  # nothing written: never held


def test_store_with_an_unsynced_cache_holds_and_says_so() -> None:
    store = ConsistencyStore({"pods": lambda: ""})
    store.wrote_at("ns/web", "u1", "pods", "3")
    with pytest.raises(StaleCache, match=r"read version is not synced \(written version: 3\)"):
        store.ensure_ready("ns/web")


def test_store_never_holds_on_versions_it_cannot_compare() -> None:
    store = ConsistencyStore({"pods": lambda: "opaque-token"})
    store.wrote_at("ns/web", "u1", "pods", "7")
    store.ensure_ready("ns/web")  # read version not a number: fails open
    store.wrote_at("ns/web", "u1", "pods", "not-a-number")  # never recorded
    assert len(store) == 0


def test_store_checks_every_resource_written() -> None:
    seen = {"pods": "20", "replicasets.apps": "4"}
    store = ConsistencyStore({r: (lambda r=r: seen[r]) for r in seen})
    store.wrote_at("ns/web", "u1", "pods", "15")
    store.wrote_at("ns/web", "u1", "replicasets.apps", "16")
    with pytest.raises(StaleCache) as stale:
        store.ensure_ready("ns/web")
    assert stale.value.resource == "replicasets.apps"


def test_store_clear_spares_a_recreated_owners_record() -> None:
    store = ConsistencyStore({"pods": lambda: "1"})
    store.wrote_at("ns/web", "old-uid", "pods", "5")
    store.wrote_at("ns/web", "new-uid", "pods", "6")  # re-created: a fresh record
    store.clear("ns/web", "old-uid")  # the old one's delete event: not this record
    with pytest.raises(StaleCache):
        store.ensure_ready("ns/web")
    store.clear("ns/web")
    store.ensure_ready("ns/web")
