from __future__ import annotations

from typing import Any

import pytest

from pycm.cache.indexer import CONTROLLER_UID_INDEX, NAMESPACE_INDEX, Indexer, IndexerError
from pycm.cache.listers import Lister
from pycm.cache.store import DeletedFinalStateUnknown, KeyError_, meta_namespace_key
from tests.cache.helpers import pod


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        pytest.param(pod("a", ns="ns1"), "ns1/a", id="namespaced"),
        pytest.param(pod("node-1", ns=None), "node-1", id="cluster-scoped"),
        pytest.param(DeletedFinalStateUnknown("ns/x", pod("y")), "ns/x", id="tombstone"),
    ],
)
def test_meta_namespace_key_object_kind_expected_key(obj: Any, key: str) -> None:
    assert meta_namespace_key(obj) == key


def test_meta_namespace_key_no_name_raises() -> None:
    with pytest.raises(KeyError_):
        meta_namespace_key({"metadata": {"namespace": "x"}})


def _filled() -> Indexer:
    idx = Indexer()
    idx.add(pod("a", ns="ns1", owner_uid="rs-1"))
    idx.add(pod("b", ns="ns1", owner_uid="rs-2"))
    idx.add(pod("c", ns="ns2", owner_uid="rs-1"))
    idx.add(pod("d", ns="ns2"))
    return idx


@pytest.mark.parametrize(
    ("index", "value", "names"),
    [
        pytest.param(NAMESPACE_INDEX, "ns1", ["a", "b"], id="namespace"),
        pytest.param(NAMESPACE_INDEX, "nope", [], id="namespace-unknown-value"),
        pytest.param(CONTROLLER_UID_INDEX, "rs-1", ["a", "c"], id="controller-uid"),
        pytest.param(CONTROLLER_UID_INDEX, "rs-2", ["b"], id="controller-uid-single"),
    ],
)
def test_indexer_by_index_value_objects_in_key_order(
    index: str, value: str, names: list[str]
) -> None:
    assert [o["metadata"]["name"] for o in _filled().by_index(index, value)] == names


def test_indexer_update_changing_index_value_moves_the_key() -> None:
    idx = _filled()
    idx.update(pod("a", "2", ns="ns1", owner_uid="rs-2"))
    assert idx.index_keys(CONTROLLER_UID_INDEX, "rs-1") == ["ns2/c"]
    assert idx.index_keys(CONTROLLER_UID_INDEX, "rs-2") == ["ns1/a", "ns1/b"]
    assert idx.get_by_key("ns1/a")["metadata"]["resourceVersion"] == "2"  # type: ignore[index]


def test_indexer_delete_last_key_of_value_drops_the_value() -> None:
    idx = _filled()
    idx.delete(pod("b", ns="ns1"))
    idx.delete(DeletedFinalStateUnknown("ns2/nothing", pod("x")))  # unknown key: ignored
    assert idx.list_index_func_values(CONTROLLER_UID_INDEX) == ["rs-1"]
    assert sorted(idx.list_keys()) == ["ns1/a", "ns2/c", "ns2/d"]
    assert len(idx) == 3


def test_indexer_add_indexers_after_objects_indexes_existing_ones() -> None:
    idx = _filled()
    idx.add_indexers({"by-name-len": lambda o: [str(len(o["metadata"]["name"]))]})
    idx.add(pod("long", ns="ns1"))
    assert idx.index_keys("by-name-len", "1") == ["ns1/a", "ns1/b", "ns2/c", "ns2/d"]
    assert idx.index_keys("by-name-len", "4") == ["ns1/long"]
    with pytest.raises(IndexerError):
        idx.add_indexers({NAMESPACE_INDEX: lambda o: []})


def test_indexer_unknown_index_raises() -> None:
    with pytest.raises(IndexerError):
        Indexer().by_index("nope", "x")


def test_indexer_replace_rebuilds_items_and_indexes() -> None:
    idx = _filled()
    idx.replace([pod("z", ns="ns3", owner_uid="rs-9")], "10")
    assert idx.list_keys() == ["ns3/z"]
    assert idx.index_keys(NAMESPACE_INDEX, "ns1") == []
    assert idx.index_keys(CONTROLLER_UID_INDEX, "rs-9") == ["ns3/z"]


def test_indexer_index_by_object_returns_objects_sharing_values() -> None:
    got = _filled().index(CONTROLLER_UID_INDEX, pod("q", owner_uid="rs-1"))
    assert [o["metadata"]["name"] for o in got] == ["a", "c"]


class _Eq:
    def __init__(self, key: str, value: str) -> None:
        self.key, self.value = key, value

    def matches(self, labels: Any) -> bool:
        return bool(labels.get(self.key) == self.value)


def _lister() -> Lister:
    idx = Indexer()
    idx.add(pod("a", ns="ns1", labels={"app": "web"}))
    idx.add(pod("b", ns="ns1", labels={"app": "db"}))
    idx.add(pod("c", ns="ns2", labels={"app": "web"}))
    idx.add(pod("n1", ns=None))
    return Lister(idx)


@pytest.mark.parametrize(
    ("namespace", "selector", "names"),
    [
        pytest.param(None, None, ["a", "b", "c", "n1"], id="everything"),
        pytest.param("ns1", None, ["a", "b"], id="namespace"),
        pytest.param(None, _Eq("app", "web"), ["a", "c"], id="selector"),
        pytest.param("ns1", _Eq("app", "web"), ["a"], id="namespace-and-selector"),
        pytest.param("ns3", None, [], id="empty-namespace"),
    ],
)
def test_lister_list_namespace_and_selector_filters(
    namespace: str | None, selector: _Eq | None, names: list[str]
) -> None:
    got = _lister().list(namespace, selector)
    assert sorted(o["metadata"]["name"] for o in got) == names


def test_lister_list_with_pycm_api_selector_matches() -> None:
    from pycm.api.labels import parse

    got = _lister().list(None, parse("app in (db)"))
    assert [o["metadata"]["name"] for o in got] == ["b"]


@pytest.mark.parametrize(
    ("namespace", "name", "found"),
    [
        pytest.param("ns1", "a", True, id="namespaced"),
        pytest.param(None, "n1", True, id="cluster-scoped"),
        pytest.param("ns2", "a", False, id="other-namespace"),
    ],
)
def test_lister_get_namespace_name_found(namespace: str | None, name: str, found: bool) -> None:
    assert (_lister().get(namespace, name) is not None) is found
