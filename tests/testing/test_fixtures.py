"""pycm.testing's fixtures as a user's suite uses them (the plugin is loaded here through its
pytest11 entry point, as in any environment where pycm is installed): a session cluster, a
namespace per test, YAML applied, an in-process manager running a controller registered in
code, and wait_for failures that show the object's last state and its history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pycm.testing import Cluster, ManagerError, ManagerHandle, WaitTimeout, wait_for
from tests.testing.stamp_controller import CONFIGMAP, STAMP


def _stamped(obj: Any) -> bool:
    return bool((obj.get("data") or {}).get("stamped") == "yes")


def test_manager_reconciles_applied_yaml_in_fresh_namespace(
    pycm_cluster: Cluster, pycm_namespace: str, pycm_manager: Callable[..., ManagerHandle]
) -> None:
    pycm_manager(["stamp"], descriptors=[STAMP])
    (applied,) = pycm_cluster.apply(CONFIGMAP, namespace=pycm_namespace)
    assert applied["metadata"]["namespace"] == pycm_namespace
    obj = pycm_cluster.wait_for_object("v1", "ConfigMap", "hello", pycm_namespace, _stamped)
    assert obj["data"] == {"message": "hi", "stamped": "yes"}
    # Applying again updates (merge) rather than failing on the existing object.
    pycm_cluster.apply(CONFIGMAP.replace("message: hi", "message: again"), pycm_namespace)
    again = pycm_cluster.get("v1", "ConfigMap", "hello", pycm_namespace)
    assert again["data"]["message"] == "again"


def test_namespaces_are_fresh_per_test(pycm_cluster: Cluster, pycm_namespace: str) -> None:
    assert pycm_cluster.get("v1", "ConfigMap", "hello", pycm_namespace) is None
    assert pycm_cluster.get("v1", "Namespace", pycm_namespace) is not None


def test_wait_for_object_timeout_shows_last_state_and_history(
    pycm_cluster: Cluster, pycm_namespace: str, pycm_manager: Callable[..., ManagerHandle]
) -> None:
    pycm_manager(["stamp"], descriptors=[STAMP])
    pycm_cluster.apply(CONFIGMAP, namespace=pycm_namespace)
    pycm_cluster.wait_for_object("v1", "ConfigMap", "hello", pycm_namespace, _stamped)

    def never(obj: Any) -> bool:
        return False

    with pytest.raises(WaitTimeout) as info:
        pycm_cluster.wait_for_object("v1", "ConfigMap", "hello", pycm_namespace, never, 0.3)
    text = str(info.value)
    assert text.startswith(
        f"timed out after 0.3s waiting for ConfigMap {pycm_namespace}/hello to satisfy never"
    )
    assert f"last state of ConfigMap {pycm_namespace}/hello:" in text
    assert "stamped: 'yes'" in text or "stamped: yes" in text
    assert "history in the manager:" in text
    assert "stamp" in text.split("history in the manager:")[1]  # its reconcile is named


def test_wait_for_returns_the_value_or_fails_with_the_last_one() -> None:
    values = iter([0, 0, 7])
    assert wait_for(lambda: next(values), 5) == 7
    with pytest.raises(WaitTimeout, match=r"waiting for the answer\nlast: 0"):
        wait_for(lambda: 0, 0.1, what="the answer")


def test_manager_that_cannot_start_fails_with_its_reason(pycm_cluster: Cluster) -> None:
    with pytest.raises(ManagerError, match="is not in the list of known controllers"):
        ManagerHandle(pycm_cluster.kubeconfig, ["no-such-controller"])

    async def broken(ctx: Any) -> None:
        raise RuntimeError("no config for you")

    from pycm.controller import ControllerDescriptor

    handle = ManagerHandle(
        pycm_cluster.kubeconfig,
        ["broken"],
        descriptors=[ControllerDescriptor("broken", broken)],
    )
    with pytest.raises(ManagerError) as info:
        handle.start()
    assert "controller 'broken' (registered in code) failed to start: RuntimeError: " in str(
        info.value
    )
    assert handle.stop(check=False) == 1
