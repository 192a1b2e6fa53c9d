"""pycm.testing's fixtures as a user's suite uses them (the plugin is loaded here through its
pytest11 entry point, as in any environment where pycm is installed): a session cluster, a
namespace per test, YAML applied, an in-process manager running a controller registered in
code, and wait_for failures that show the object's last state and its history."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pycm.testing import Cluster, ManagerError, ManagerHandle, WaitTimeout, wait_for
from tests.sim.conftest_kubectl import kubectl  # noqa: F401 - the fixture
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


def test_a_controller_the_manager_did_not_start_is_folded_as_disabled(
    pycm_cluster: Cluster, pycm_manager: Callable[..., ManagerHandle]
) -> None:
    """The manager itself says which registered controllers it did not start (a plugin off
    by default, built-ins not named): the state pycm top and the dashboard read shows them
    disabled, with the reason, and the one it runs as started — not all alike as idle rows
    (the views' own tests feed them a hand-made event)."""
    from pycm.controller import ControllerDescriptor

    async def never(ctx: Any) -> None:
        raise AssertionError("a disabled controller's init ran")

    off = ControllerDescriptor("idle-plugin", never, enabled_by_default=False)
    handle = pycm_manager(["stamp"], descriptors=[STAMP, off])

    async def rows() -> dict[str, Any]:
        snapshot = handle.manager.state.snapshot()
        (instance,) = snapshot["controllers"].values()
        return dict(instance)

    controllers = handle.call(rows())
    assert {name: row["disabled"] for name, row in controllers.items()} == {
        "stamp": False,
        "idle-plugin": True,
        "deployment": True,
        "replicaset": True,
    }
    assert controllers["idle-plugin"]["disabled_reason"] == "--controllers"
    assert (controllers["stamp"]["init"], controllers["stamp"]["started"]) == ("started", True)


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


WEBSITE_CRD = Path(__file__).resolve().parents[2] / "examples/website-operator/deploy/crd.yaml"
WEBSITE = """
apiVersion: example.com/v1
kind: Website
metadata: {name: shop}
spec: {replicas: 2, image: nginx:1.25}
"""


def test_apply_a_crd_then_objects_of_it_in_one_go(
    pycm_cluster: Cluster, pycm_namespace: str
) -> None:
    """The CRD is waited for until its kind is served: the Website after it in the same YAML
    applies; objects of a custom kind are read and waited for like any other."""
    applied = pycm_cluster.apply(WEBSITE_CRD.read_text() + "\n---\n" + WEBSITE, pycm_namespace)
    assert [obj["kind"] for obj in applied] == ["CustomResourceDefinition", "Website"]
    site = pycm_cluster.wait_for_object("example.com/v1", "Website", "shop", pycm_namespace)
    assert site["spec"] == {"replicas": 2, "image": "nginx:1.25"}


@pytest.mark.kubectl
def test_kubectl_get_websites_prints_the_crds_columns(
    pycm_cluster: Cluster,
    pycm_namespace: str,
    kubectl: Path,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    """The Website CRD's printer columns, with a Ready condition written here through the
    status subresource (what the operator does)."""
    pycm_cluster.apply(WEBSITE_CRD)
    pycm_cluster.apply(WEBSITE, pycm_namespace)
    condition = {
        "type": "Ready",
        "status": "True",
        "reason": "Available",
        "message": "2 of 2 replicas available",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    pycm_cluster.resource("example.com/v1", "Website").status.patch(
        body={"status": {"conditions": [condition]}},
        name="shop",
        namespace=pycm_namespace,
        content_type="application/merge-patch+json",
    )
    out = subprocess.run(
        [
            str(kubectl),
            "--kubeconfig",
            str(pycm_cluster.kubeconfig),
            "get",
            "websites",
            "-n",
            pycm_namespace,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.splitlines()
    assert header.split() == ["NAME", "REPLICAS", "IMAGE", "READY", "AGE"]
    assert row.split()[:4] == ["shop", "2", "nginx:1.25", "True"]
