"""Per-kind strategies and the registry that serves kinds at run time (how a custom resource
plugs in): a kind added to a running emulator is discovered, routed, defaulted, validated,
printed and watched through its strategy, and removing it ends all of that."""

from __future__ import annotations

import httpx
import pytest

from pycm.sim.errors import APIError, Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.resources import REGISTRY, Registry, Resource
from pycm.sim.seed import seed_cluster
from pycm.sim.server import Emulator
from pycm.sim.store import Store
from pycm.sim.tables import Printer, col
from pycm.sim.watch import ADDED, DELETED
from pycm.util.clock import FakeClock

GROUP = "example.com"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


class WidgetStrategy(Strategy):
    """A custom resource's strategy, as a CRD's would be built from its schema."""

    status_subresource = True
    generation_on_spec = True
    field_labels = ("spec.color",)

    def __init__(self) -> None:
        super().__init__(
            "Widget",
            Printer(
                [col("Name", fmt="name"), col("Size", "integer")],
                lambda o, now: [o["metadata"]["name"], (o.get("spec") or {}).get("size")],
            ),
        )

    def default(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("size", 1)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "New"}

    def validate(self, obj: Obj) -> list[Cause]:
        causes = super().validate(obj)
        size = (obj.get("spec") or {}).get("size")
        if not isinstance(size, int) or size > 10:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {size}: must be at most 10",
                    "field": "spec.size",
                }
            )
        return causes


def widgets(version: str = "v1") -> Resource:
    return Resource(
        GROUP,
        version,
        "widgets",
        "Widget",
        "widget",
        True,
        WidgetStrategy(),
        short_names=("wd",),
        categories=("all",),
        subresources=("status",),
    )


def test_builtin_strategies_name_their_kinds_and_agree_on_status() -> None:
    for res in REGISTRY.resources.values():
        assert res.strategy.kind == res.kind, res.plural
        assert res.strategy.status_subresource == res.has_status, res.plural


@pytest.mark.parametrize(
    ("second", "why"),
    [
        pytest.param(widgets(), "registered twice", id="same-version-twice"),
        pytest.param(
            Resource(
                GROUP,
                "v2",
                "widgets",
                "Gadget",
                "widget",
                True,
                WidgetStrategy(),
                subresources=("status",),
            ),
            "versions disagree",
            id="other-kind-same-plural",
        ),
        pytest.param(
            Resource(GROUP, "v2", "widgets", "Widget", "widget", True, WidgetStrategy()),
            "status subresource and strategy disagree",
            id="status-without-subresource",
        ),
    ],
)
def test_registry_add_refuses_conflicting_resources(second: Resource, why: str) -> None:
    registry = Registry()
    registry.add(widgets())
    with pytest.raises(ValueError, match=why):
        registry.add(second)


def test_store_serve_changes_only_its_own_registry() -> None:
    store, other = Store(clock=FakeClock()), Store(clock=FakeClock())
    store.serve(widgets())
    assert store.registry.get(GROUP, "v1", "widgets") is not None
    assert other.registry.get(GROUP, "v1", "widgets") is None
    assert REGISTRY.get(GROUP, "v1", "widgets") is None


def _store() -> Store:
    store = Store(clock=FakeClock())
    seed_cluster(store, 1)
    return store


def test_store_a_second_version_serves_the_same_objects() -> None:
    store = _store()
    v1, v1beta1 = widgets(), widgets("v1beta1")
    store.serve(v1)
    store.serve(v1beta1)
    store.create(v1, {"metadata": {"name": "w"}, "spec": {"size": 2}}, "default")
    assert store.get(v1beta1, "default", "w")["spec"] == {"size": 2}
    assert store.registry.resources[(GROUP, "widgets")] is v1  # the storage version
    assert [gv for gv in store.registry.group_versions() if gv[0] == GROUP] == [
        (GROUP, "v1"),
        (GROUP, "v1beta1"),
    ]
    assert [r.version for r in store.unserve(GROUP, "widgets")] == ["v1", "v1beta1"]
    assert store.registry.get(GROUP, "v1beta1", "widgets") is None


def test_store_strategy_status_handling_is_generic() -> None:
    store = _store()
    res = widgets()
    store.serve(res)
    created = store.create(
        res,
        {"metadata": {"name": "w"}, "spec": {"color": "red"}, "status": {"phase": "Sent"}},
        "default",
    )
    assert created["spec"] == {"color": "red", "size": 1}  # defaulted
    assert created["status"] == {"phase": "New"}  # prepared for create
    assert created["metadata"]["generation"] == 1
    # The main resource: spec taken, the sent status ignored, generation bumped.
    sent = {**created, "spec": {"color": "blue", "size": 3}, "status": {"phase": "Ignored"}}
    updated = store.update(res, sent)
    assert updated["spec"] == {"color": "blue", "size": 3}
    assert updated["status"] == {"phase": "New"}
    assert updated["metadata"]["generation"] == 2
    # /status: status taken, the sent spec ignored, generation kept.
    sent = {**updated, "spec": {"color": "green", "size": 9}, "status": {"phase": "Ready"}}
    status = store.update_status(res, sent)
    assert status["spec"] == {"color": "blue", "size": 3}
    assert status["status"] == {"phase": "Ready"}
    assert status["metadata"]["generation"] == 2
    with pytest.raises(APIError) as err:
        store.update(res, {**status, "spec": {"size": 11}})
    assert err.value.code == 422
    assert err.value.status()["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 11: must be at most 10",
            "field": "spec.size",
        }
    ]


@pytest.mark.asyncio
async def test_emulator_serves_a_kind_added_at_run_time_until_it_is_removed(
    emu: Emulator, http: httpx.AsyncClient
) -> None:
    res = widgets()
    emu.store.serve(res)
    groups = (await http.get("/apis")).json()["groups"]
    assert {"groupVersion": f"{GROUP}/v1", "version": "v1"} in next(
        g["versions"] for g in groups if g["name"] == GROUP
    )
    listed = (await http.get(f"/apis/{GROUP}/v1")).json()["resources"]
    assert [(r["name"], r["kind"]) for r in listed] == [
        ("widgets", "Widget"),
        ("widgets/status", "Widget"),
    ]
    assert listed[0]["shortNames"] == ["wd"]
    base = f"/apis/{GROUP}/v1/namespaces/default/widgets"
    watcher = emu.store.watch(res, "default")
    try:
        created = await http.post(base, json={"metadata": {"name": "w"}, "spec": {"color": "red"}})
        assert created.status_code == 201, created.text
        assert created.json()["apiVersion"] == f"{GROUP}/v1"
        assert created.json()["spec"]["size"] == 1
        invalid = await http.post(base, json={"metadata": {"name": "x"}, "spec": {"size": 12}})
        assert invalid.status_code == 422
        assert invalid.json()["message"] == (
            'Widget.example.com "x" is invalid: spec.size: Invalid value: 12: must be at most 10'
        )
        table = (await http.get(base, headers={"Accept": TABLE})).json()
        assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size"]
        assert [r["cells"] for r in table["rows"]] == [["w", 1]]
        selected = await http.get(base, params={"fieldSelector": "spec.color=red"})
        assert [o["metadata"]["name"] for o in selected.json()["items"]] == ["w"]
        unknown = await http.get(base, params={"fieldSelector": "spec.size=1"})
        assert unknown.status_code == 400
        assert unknown.json()["message"] == "field label not supported: spec.size"

        emu.store.unserve(GROUP, "widgets")
        types = []
        while (entry := watcher.pop()) is not None:
            types.append(entry[0])
        assert types == [ADDED, DELETED]
        assert (await http.get(f"{base}/w")).status_code == 404
        assert (await http.get(f"/apis/{GROUP}/v1")).status_code == 404
        assert GROUP not in [g["name"] for g in (await http.get("/apis")).json()["groups"]]
    finally:
        watcher.stop()
