"""Fixtures for the kubectl tests: the local kubectl and one emulator process for the module.

kubectl sends a bearer token only over HTTPS, so the emulator serves TLS (its CA is in the
kubeconfig it writes). kubectl runs with ``--kubeconfig`` that file, HOME in a temporary
directory (its discovery cache) and no KUBECONFIG in its environment.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from tests.sim.conftest import SimProcess, start_sim, stop_sim
from tests.sim.conftest_kubectl import kubectl

__all__ = ["kubectl"]

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def kube_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    tmp = tmp_path_factory.mktemp("kubectl")
    args = ["--tls", "--kubelet=on", "--pod-ready-delay", "100ms", "--nodes", "2"]
    process = start_sim([*args, "--kubeconfig-out", str(tmp / "kubeconfig")], tmp)
    yield process
    assert stop_sim(process) == 0


@pytest.fixture(scope="module")
def kube_api(kube_sim: SimProcess) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=str(kube_sim.kubeconfig))
    yield api
    api.close()


@pytest.fixture(scope="module")
def run_kubectl(kubectl: Path, kube_sim: SimProcess) -> Kubectl:
    home = kube_sim.tmp / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(home)

    def run(
        *args: str, timeout: float = 30, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(kubectl), "--kubeconfig", str(kube_sim.kubeconfig), *args]
        result = subprocess.run(
            argv, capture_output=True, text=True, env=env, timeout=timeout, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result

    return run
