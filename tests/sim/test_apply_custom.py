"""Server-side apply and managedFields on a custom resource: list and map semantics from its
schema's markers (x-kubernetes-list-type, -list-map-keys, -map-type), as structured-merge-diff
reads them — a list without a type is atomic, a ``set`` merges item by item, a ``map`` by its
keys (with a key's default filling an item that leaves it out)."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.sim import fieldset
from pycm.sim.apply import apply
from pycm.sim.listrules import ListRules, rules_for, rules_from_schema
from pycm.sim.registry.plain import PlainStrategy
from pycm.sim.resources import Resource
from pycm.sim.seed import seed_cluster
from pycm.sim.store import Store
from pycm.util.clock import FakeClock

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "args": {"type": "array", "items": {"type": "string"}},
                "backends": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["host", "port"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "host": {"type": "string"},
                            "port": {"type": "integer", "default": 80},
                            "weight": {"type": "integer"},
                        },
                    },
                },
                "selector": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"},
                },
                "settings": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }
    },
}


class SchemaStrategy(PlainStrategy):
    """A custom resource's strategy as far as the rules go: it holds the CRD's schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        super().__init__("Widget")
        self.raw_schema = schema


def _served() -> tuple[Store, Resource]:
    store = Store(clock=FakeClock())
    seed_cluster(store, 1)
    res = Resource("example.com", "v1", "widgets", "Widget", "widget", True, SchemaStrategy(SCHEMA))
    store.serve(res)
    return store, res


def widget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
    }


def _owners(obj: dict[str, Any]) -> dict[str, list[str]]:
    return {
        f"{e['manager']}/{e['operation']}": list(fieldset.paths(e["fieldsV1"]))
        for e in obj["metadata"].get("managedFields") or []
    }


def test_rules_from_schema_reads_the_markers() -> None:
    rules = rules_from_schema(SCHEMA)
    assert dict(rules.list_keys) == {"backends": (("host", "port"),)}
    assert rules.set_lists == frozenset({"tags"})
    assert rules.atomic_maps == frozenset({"selector"})
    assert dict(rules.key_defaults) == {"backends": {"port": 80}}
    assert not rules.empty_lists_absent
    assert rules.zero_present == frozenset({("metadata",)})


def test_rules_for_a_resource_without_a_schema_are_the_builtin_ones() -> None:
    builtin = ListRules({}, frozenset(), frozenset())
    assert rules_for(object(), builtin) is builtin
    _, res = _served()
    first = rules_for(res, builtin)
    assert first is not builtin and "tags" in first.set_lists
    assert rules_for(res, builtin) is first  # cached per schema


def test_rules_from_a_hostile_schema_are_bounded() -> None:
    deep: dict[str, Any] = {"type": "array", "x-kubernetes-list-type": "set"}
    for i in range(1000):
        deep = {"type": "object", "properties": {f"f{i}": deep}}
    assert rules_from_schema(deep).set_lists == frozenset()  # below the bound: not read


def test_apply_custom_set_merges_item_by_item_with_shared_ownership() -> None:
    store, res = _served()
    apply(store, res, "default", "w", widget(tags=["a", "b"]), manager="one", force=False)
    got, _ = apply(store, res, "default", "w", widget(tags=["b", "c"]), manager="two", force=False)
    assert got["spec"]["tags"] == ["a", "b", "c"]
    owners = _owners(got)
    assert owners["one/Apply"] == ['.spec.tags[="a"]', '.spec.tags[="b"]']
    assert owners["two/Apply"] == ['.spec.tags[="b"]', '.spec.tags[="c"]']
    # "one" stops applying "b": "two" still owns it, so it stays; "a" goes.
    got, _ = apply(store, res, "default", "w", widget(tags=[]), manager="one", force=False)
    assert got["spec"]["tags"] == ["b", "c"]


def test_apply_custom_untyped_list_is_atomic_and_conflicts_whole() -> None:
    store, res = _served()
    apply(store, res, "default", "w", widget(args=["x"]), manager="one", force=False)
    with pytest.raises(Exception) as refused:
        apply(store, res, "default", "w", widget(args=["y"]), manager="two", force=False)
    assert str(refused.value) == 'Apply failed with 1 conflict: conflict with "one": .spec.args'
    got, _ = apply(store, res, "default", "w", widget(args=["y"]), manager="two", force=True)
    assert got["spec"]["args"] == ["y"]


def test_apply_custom_map_list_merges_by_keys_with_their_defaults() -> None:
    store, res = _served()
    stored = store.create(res, widget(backends=[{"host": "a", "port": 80, "weight": 1}]), "default")
    assert stored["spec"]["backends"][0]["port"] == 80
    got, _ = apply(
        store, res, "default", "w", widget(backends=[{"host": "a", "weight": 5}, {"host": "b"}]),
        manager="lb", force=True,
    )  # fmt: skip
    assert got["spec"]["backends"] == [
        {"host": "a", "port": 80, "weight": 5},
        {"host": "b"},
    ]
    assert _owners(got)["lb/Apply"] == [
        '.spec.backends[host="a",port=80]',
        '.spec.backends[host="b",port=80]',
        '.spec.backends[host="a",port=80].host',
        '.spec.backends[host="a",port=80].weight',
        '.spec.backends[host="b",port=80].host',
    ]


def test_apply_custom_atomic_map_is_replaced_and_granular_map_merged() -> None:
    store, res = _served()
    first = widget(selector={"a": "1"}, settings={"x": "1"})
    apply(store, res, "default", "w", first, manager="one", force=False)
    second = widget(selector={"a": "1"}, settings={"y": "2"})
    got, _ = apply(store, res, "default", "w", second, manager="two", force=False)
    assert got["spec"]["settings"] == {"x": "1", "y": "2"}
    owners = _owners(got)
    assert owners["two/Apply"] == [".spec.selector", ".spec.settings.y"]
    with pytest.raises(Exception) as refused:
        apply(store, res, "default", "w", widget(selector={"b": "2"}), manager="two", force=False)
    assert str(refused.value) == 'Apply failed with 1 conflict: conflict with "one": .spec.selector'


def test_update_entries_of_a_custom_resource_use_its_rules() -> None:
    store, res = _served()
    created = store.create(res, widget(tags=["a"], args=["x"]), "default", manager="maker")
    # An Update owns the maps and lists it made (``.``): unstructured, as kube records them.
    assert _owners(created)["maker/Update"] == [
        ".spec",
        ".spec.args",
        ".spec.tags",
        '.spec.tags[="a"]',
    ]
