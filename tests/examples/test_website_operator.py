"""examples/website-operator: `kubectl get websites` prints the CRD's columns for a reconciled
one, and the walkthrough's user flow end to end, as docs/controllers.md tells it: the plugin
installed, `pycm run --wait-for-resources` before the CRD, kubectl apply, fail and recover.
(Its own suite runs with plain pytest in a fresh environment where pycm comes from its wheel:
tests/testing/test_wheel.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pycm.testing import Cluster, ManagerHandle
from tests.sim.conftest_kubectl import kubectl  # noqa: F401 - the fixture
from tests.support.plugins import install_example

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "website-operator"


@pytest.mark.kubectl
def test_kubectl_get_websites_shows_the_printer_columns(
    pycm_cluster: Cluster,
    pycm_namespace: str,
    pycm_manager: Callable[..., ManagerHandle],
    kubectl: Path,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from pycm_website.controller import descriptor

    pycm_cluster.apply(EXAMPLE / "deploy" / "crd.yaml")
    pycm_manager(["website", "deployment", "replicaset"], descriptors=[descriptor])
    pycm_cluster.apply(EXAMPLE / "deploy" / "website.yaml", namespace=pycm_namespace)

    def ready(obj: Any) -> bool:
        conditions = (obj.get("status") or {}).get("conditions") or ()
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    pycm_cluster.wait_for_object("example.com/v1", "Website", "shop", pycm_namespace, ready, 30)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(pycm_cluster.kubeconfig.parent)}
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
        env=env,
    )
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.splitlines()
    assert header.split() == ["NAME", "REPLICAS", "IMAGE", "READY", "AGE"]
    assert row.split()[:4] == ["shop", "2", "nginx:1.25", "True"]


def _install_plugin(tmp: Path) -> Path:
    return install_example(EXAMPLE, tmp)


@pytest.mark.kubectl
@pytest.mark.e2e
def test_user_flow_installed_operator_waits_for_its_crd_reconciles_fails_and_recovers(
    pycm_cluster: Cluster,
    pycm_namespace: str,
    kubectl: Path,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    """docs/controllers.md's walkthrough: the plugin installed, `pycm run --wait-for-resources`
    started before the CRD (/readyz names the kind), the CRD and a Website applied with
    kubectl, Ready, `kubectl get websites`, broken and fixed, deleted."""
    import httpx

    from pycm.testing import wait_for
    from tests.support.manager import free_port

    site = _install_plugin(tmp_path)
    kc = ["--kubeconfig", str(pycm_cluster.kubeconfig)]
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PYTHONPATH")}

    def k(*args: str) -> str:
        out = subprocess.run(
            [str(kubectl), *kc, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": env.get("PATH", ""), "HOME": str(tmp_path)},
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    crd = pycm_cluster.get(
        "apiextensions.k8s.io/v1", "CustomResourceDefinition", "websites.example.com"
    )
    if crd is not None:  # another test of this session installed it: start from none
        k("delete", "crd", "websites.example.com")
    port = free_port()
    log = (tmp_path / "manager.log").open("wb")
    manager = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pycm",
            "run",
            *kc,
            "--leader-elect=false",
            "--secure-port",
            str(port),
            "--bind-address",
            "127.0.0.1",
            "--controllers=*,website",
            "--wait-for-resources",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**env, "PYTHONPATH": str(site)},
    )
    try:

        def readyz() -> str:
            try:
                r = httpx.get(f"https://127.0.0.1:{port}/readyz?verbose", verify=False)
            except httpx.HTTPError:
                return ""
            return r.text

        wait_for(
            lambda: "[-]waiting-for:Website.v1.example.com" in readyz(),
            30,
            what="/readyz to name the kind it waits for",
        )
        k("apply", "-f", str(EXAMPLE / "deploy" / "crd.yaml"))
        wait_for(
            lambda: "waiting-for" in readyz() and "[-]" not in readyz(),
            30,
            what="/readyz to pass once the CRD is served",
        )
        k("apply", "-n", pycm_namespace, "-f", str(EXAMPLE / "deploy" / "website.yaml"))

        def condition(reason: str) -> Callable[[Any], bool]:
            def has(obj: Any) -> bool:
                conditions = (obj.get("status") or {}).get("conditions") or ()
                return any(c["type"] == "Ready" and c["reason"] == reason for c in conditions)

            has.__name__ = f"Ready reason {reason}"
            return has

        pycm_cluster.wait_for_object(
            "example.com/v1", "Website", "shop", pycm_namespace, condition("Available"), 60
        )
        header, row = k("get", "websites", "-n", pycm_namespace).splitlines()
        assert header.split() == ["NAME", "REPLICAS", "IMAGE", "READY", "AGE"]
        assert row.split()[:4] == ["shop", "2", "nginx:1.25", "True"]
        k(
            "patch",
            "website",
            "shop",
            "-n",
            pycm_namespace,
            "--type",
            "merge",
            "-p",
            '{"spec":{"image":""}}',
        )
        pycm_cluster.wait_for_object(
            "example.com/v1", "Website", "shop", pycm_namespace, condition("NoImage"), 30
        )
        wait_for(
            lambda: "ReconcileFailed" in k("get", "events", "-n", pycm_namespace),
            30,
            what="the Warning event",
        )
        k(
            "patch",
            "website",
            "shop",
            "-n",
            pycm_namespace,
            "--type",
            "merge",
            "-p",
            '{"spec":{"image":"nginx:1.27"}}',
        )
        pycm_cluster.wait_for_object(
            "example.com/v1", "Website", "shop", pycm_namespace, condition("Available"), 60
        )
        k("delete", "website", "shop", "-n", pycm_namespace)
        wait_for(
            lambda: pycm_cluster.get("apps/v1", "Deployment", "shop", pycm_namespace) is None,
            30,
            what="the Deployment to go with the Website",
        )
    finally:
        manager.terminate()
        try:
            code = manager.wait(timeout=30)
        finally:
            log.close()
    assert code == 0, (tmp_path / "manager.log").read_text()[-3000:]
