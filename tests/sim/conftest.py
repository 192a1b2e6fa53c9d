"""Fixtures for the emulator's tests.

- ``sim``: one ``python -m pycm.sim`` process for the module (small watch window, a token file),
  read through its printed line; the official ``kubernetes`` client talks to it (``api``).
- ``emu`` / ``http``: an in-process emulator (``run_emulator``) and an httpx client with the
  admin token, for async tests that also reach into the store.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from kubernetes import client, config

from pycm.sim.seed import seed_cluster
from pycm.sim.server import Emulator, run_emulator
from pycm.sim.store import Store
from pycm.util.clock import FakeClock

LINE = re.compile(r"^pycm sim: serving (\S+) \(kubeconfig: (.+)\)$")
TOKENS = 'alice-token,alice,u-alice,"devs,readers"\nbob-token,bob,u-bob\n'


@dataclass
class SimProcess:
    proc: subprocess.Popen[str]
    url: str
    kubeconfig: Path
    tmp: Path


def start_sim(args: list[str], tmp: Path, module: str = "pycm.sim") -> SimProcess:
    """Start the emulator as a process and wait (bounded) for its one line."""
    env = {**os.environ, "KUBECONFIG": str(tmp / "no-such-kubeconfig"), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", *module.split(), *args]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()  # bounded: the process exits or prints
    match = LINE.match(line)
    if match is None:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"pycm sim printed {line!r}; stderr: {err}")
    return SimProcess(proc, match.group(1), Path(match.group(2)), tmp)


def stop_sim(sim: SimProcess) -> int:
    sim.proc.send_signal(signal.SIGTERM)
    try:
        sim.proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        sim.proc.kill()
        sim.proc.communicate()
        raise
    return sim.proc.returncode


def start_sim_with_tokens(tmp: Path, tokens: str, *flags: str) -> SimProcess:
    """A plain-HTTP emulator with no kubelet, the static ``tokens`` (a token file's text) and
    ``flags``; its kubeconfig (the admin's) is ``tmp / "kubeconfig"``."""
    (tmp / "tokens.csv").write_text(tokens)
    return start_sim(
        [
            "--tls=false",
            "--kubelet=off",
            "--kubeconfig-out",
            str(tmp / "kubeconfig"),
            "--token-auth-file",
            str(tmp / "tokens.csv"),
            *flags,
        ],
        tmp,
    )


@pytest.fixture
def store() -> Store:
    """An in-process store over one seeded node, on a fake clock (a module may define its own)."""
    s = Store(clock=FakeClock())
    seed_cluster(s, 1)
    return s


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    tmp = tmp_path_factory.mktemp("sim")
    process = start_sim_with_tokens(tmp, TOKENS, "--nodes", "2", "--watch-window", "500")
    yield process
    assert stop_sim(process) == 0


@pytest.fixture(scope="module")
def api(sim: SimProcess) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(sim.kubeconfig))
    yield api_client
    api_client.close()


@pytest.fixture
def namespace(api: client.ApiClient) -> Iterator[str]:
    """A fresh namespace per test (deleted after it)."""
    core = client.CoreV1Api(api)
    name = f"t-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


@pytest_asyncio.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with run_emulator(
        tls=False, kubelet=False, watch_window=50, bookmark_interval=0.2, nodes=2
    ) as emulator:
        yield emulator


@pytest_asyncio.fixture
async def http(emu: Emulator) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {emu.admin_token}"}
    async with httpx.AsyncClient(base_url=emu.url, headers=headers, timeout=30) as c:
        yield c


def wait_for(predicate: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}], **spec},
    }
    return body


def deployment(name: str, replicas: int = 1, image: str = "nginx:1.25") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def replicaset(name: str, replicas: int = 1) -> dict[str, Any]:
    body = deployment(name, replicas)
    body["kind"] = "ReplicaSet"
    return body
