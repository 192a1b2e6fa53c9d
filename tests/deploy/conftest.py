"""Fixtures for the deployment artefacts' tests (deploy/): the project's kubectl, the manifests
as kustomize renders them, and the parsed RBAC rules.

kubectl is Debian's kubernetes-client fetched into tools/ (never /usr/bin/kubectl); it runs with
HOME in a temporary directory and no KUBECONFIG from the environment.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.sim.conftest_kubectl import kubectl

__all__ = ["DEPLOY", "ROOT", "kubectl"]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUSTOMIZATIONS = {
    "default": DEPLOY / "kubernetes",
    "service-account-credentials": DEPLOY / "kubernetes" / "service-account-credentials",
    "coordinated-leader-election": DEPLOY / "kubernetes" / "coordinated-leader-election",
    "sharded": DEPLOY / "kubernetes" / "sharded",
}

Objects = list[dict[str, Any]]


def kubectl_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(home)
    return env


@pytest.fixture(scope="session")
def render(kubectl: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Objects]:
    """``render(name)``: the objects of a kustomization, rendered by `kubectl kustomize`."""
    home = tmp_path_factory.mktemp("kubectl-home")
    cache: dict[str, Objects] = {}

    def run(name: str) -> Objects:
        if name not in cache:
            result = subprocess.run(
                [str(kubectl), "kustomize", str(KUSTOMIZATIONS[name])],
                capture_output=True,
                text=True,
                env=kubectl_env(home),
                timeout=60,
                check=False,
            )
            assert result.returncode == 0, result.stderr
            cache[name] = [d for d in yaml.safe_load_all(result.stdout) if d]
        return cache[name]

    return run


def find(objects: Objects, kind: str, name: str) -> dict[str, Any]:
    matches = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"want one {kind} {name}, found {len(matches)}"
    return matches[0]
