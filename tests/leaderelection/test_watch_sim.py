"""``pycm lease watch --once`` against the emulator (a real process, over HTTP): it prints the
Lease's current state and exits, and says why with exit 1 when there is none to print."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from pycm.sim.kubeconfig import write_kubeconfig
from tests.sim.conftest import SimProcess, start_sim_with_tokens, stop_sim

ROOT = Path(__file__).resolve().parents[2]
# bob may read nothing but discovery.
POLICY = "rules:\n  - users: ['*']\n    verbs: [get]\n    nonResourceURLs: ['/api', '/apis/*']\n"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    tmp = tmp_path_factory.mktemp("sim")
    (tmp / "policy.yaml").write_text(POLICY)
    process = start_sim_with_tokens(
        tmp, "bob-token,bob,u-bob\n", "--authz-policy-file", str(tmp / "policy.yaml")
    )
    yield process
    assert stop_sim(process) == 0


def once(kubeconfig: Path, lease: str) -> subprocess.CompletedProcess[str]:
    argv = ["lease", "watch", lease, "--kubeconfig", str(kubeconfig), "--once"]
    return subprocess.run(
        [sys.executable, "-m", "pycm", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,  # before the fix, a missing Lease kept it waiting for ever
        check=False,
    )


def test_once_on_a_missing_lease_says_so_and_exits_1(sim: SimProcess) -> None:
    result = once(sim.kubeconfig, "default/nothing")
    assert (result.returncode, result.stdout) == (1, "lease default/nothing does not exist\n")
    assert "Traceback" not in result.stderr


def test_once_prints_the_current_state_and_exits_0(sim: SimProcess) -> None:
    api = config.new_client_from_config(config_file=str(sim.kubeconfig))
    try:
        client.CoordinationV1Api(api).create_namespaced_lease(
            "default",
            {
                "metadata": {"name": "pycm"},
                "spec": {
                    "holderIdentity": "replica-a",
                    "leaseDurationSeconds": 15,
                    "leaseTransitions": 2,
                    "renewTime": dt.datetime.now(dt.UTC).isoformat(timespec="microseconds"),
                },
            },
        )
    finally:
        api.close()
    result = once(sim.kubeconfig, "default/pycm")
    assert result.returncode == 0, result
    (line,) = result.stdout.splitlines()
    assert " holder=replica-a transitions=2 duration=15s " in line


def test_once_without_access_exits_1_with_the_api_error(sim: SimProcess, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "bob.kubeconfig"
    write_kubeconfig(kubeconfig, sim.url, "bob-token")
    result = once(kubeconfig, "default/pycm")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = result.stdout.splitlines()
    assert "error reading default/pycm: " in line and "forbidden" in line.lower(), line
