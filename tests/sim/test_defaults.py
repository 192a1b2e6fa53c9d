"""The emulator's defaulting, as kube-apiserver applies it (SetDefaults_Deployment, pods)."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.sim.defaults import apply_defaults
from pycm.sim.seed import seed_cluster
from pycm.sim.store import Store
from pycm.util.clock import FakeClock
from tests.sim.conftest import deployment

ROLLING_25 = {
    "type": "RollingUpdate",
    "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
}


@pytest.fixture
def store() -> Store:
    s = Store(clock=FakeClock(), watch_window=20, watch_queue_size=5)
    seed_cluster(s, 1)
    return s


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        pytest.param(..., ROLLING_25, id="absent"),
        pytest.param(None, ROLLING_25, id="null"),
        pytest.param({}, ROLLING_25, id="empty"),
        pytest.param({"type": ""}, ROLLING_25, id="empty-type"),
        pytest.param({"type": "RollingUpdate", "rollingUpdate": None}, ROLLING_25, id="null-ru"),
        pytest.param(
            {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": None, "maxUnavailable": 0}},
            {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            id="null-surge-kept-zero",
        ),
        pytest.param(
            {"rollingUpdate": {"maxSurge": 2}},
            {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "25%"}},
            id="type-and-missing-number",
        ),
        pytest.param({"type": "Recreate"}, {"type": "Recreate"}, id="recreate-untouched"),
    ],
)
def test_store_create_deployment_defaults_strategy_as_kube_apiserver(
    store: Store, strategy: Any, expected: dict[str, Any]
) -> None:
    body = deployment("web", replicas=4)
    if strategy is not ...:
        body["spec"]["strategy"] = strategy
    created = store.create(store.resource("deployments", "apps"), body, "default")
    assert created["spec"]["strategy"] == expected
    assert created["spec"]["revisionHistoryLimit"] == 10
    assert created["spec"]["progressDeadlineSeconds"] == 600


def test_store_update_deployment_dropping_its_strategy_is_defaulted_again(store: Store) -> None:
    deployments = store.resource("deployments", "apps")
    created = store.create(deployments, deployment("web"), "default")
    created["spec"]["strategy"] = None
    created["spec"]["replicas"] = None
    updated = store.update(deployments, created, "default")
    assert updated["spec"]["strategy"] == ROLLING_25
    assert updated["spec"]["replicas"] == 1


def test_apply_defaults_null_pod_fields_are_defaulted() -> None:
    pod: dict[str, Any] = {
        "spec": {
            "restartPolicy": None,
            "terminationGracePeriodSeconds": None,
            "containers": [{"name": "app", "image": "nginx", "imagePullPolicy": None}],
        }
    }
    apply_defaults("Pod", pod)
    assert pod["spec"]["restartPolicy"] == "Always"
    assert pod["spec"]["terminationGracePeriodSeconds"] == 30
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "Always"
