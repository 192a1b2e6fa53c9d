"""Arbitrary JSON never crashes the store: it is stored or refused with an APIError."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pycm.sim.errors import APIError
from pycm.sim.patch import apply_patch
from pycm.sim.resources import REGISTRY
from pycm.sim.seed import seed_cluster
from pycm.sim.store import Store
from tests.sim.conftest import deployment, pod

_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "a", "x=y", "A_"])
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "metadata",
                    "spec",
                    "status",
                    "name",
                    "labels",
                    "selector",
                    "matchLabels",
                    "template",
                    "containers",
                    "image",
                    "replicas",
                    "finalizers",
                    "ownerReferences",
                    "matchExpressions",
                    "operator",
                    "values",
                    "key",
                    "data",
                    "generateName",
                    "uid",
                    "namespace",
                    "annotations",
                    "$patch",
                    "strategy",
                    "type",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
_STORED = [r for r in REGISTRY.resources.values() if r.stored]


def _mutations() -> st.SearchStrategy[dict[str, Any]]:
    base = st.sampled_from([deployment("d"), pod("p"), {"metadata": {"name": "n"}}])
    return st.builds(lambda b, extra: {**b, **extra} if isinstance(extra, dict) else b, base, _json)


@pytest.mark.parametrize("resource", _STORED, ids=lambda r: r.plural)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_json | _mutations())
def test_store_create_never_crashes(resource: Any, body: Any) -> None:
    store = Store()
    seed_cluster(store, 0)
    if not isinstance(body, dict):
        return
    try:
        store.create(resource, body, "default")
    except APIError:
        pass


@settings(max_examples=150, deadline=None)
@given(
    patch=_json,
    kind=st.sampled_from(
        [
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/json-patch+json",
        ]
    ),
)
def test_patch_never_crashes(patch: Any, kind: str) -> None:
    store = Store()
    seed_cluster(store, 0)
    deps = store.resource("deployments", "apps")
    store.create(deps, deployment("d"), "default")
    try:
        apply_patch(kind, deployment("d"), patch)
        store.patch(deps, "default", "d", kind, patch)
    except APIError:
        pass
