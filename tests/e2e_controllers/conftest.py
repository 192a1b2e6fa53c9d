"""Shared fixtures for the controllers' end-to-end tests: an emulator and one ``pycm run``.

``cluster`` serves an in-process emulator (with its simulated kubelet) and starts ``pycm run``
against it as a subprocess (no leader election, secure port on 127.0.0.1, ``--trace-file``),
waits until the manager's caches are synced and yields a :class:`Cluster`: the emulator, the
manager process, an httpx client on the API with the admin token, and helpers to watch a
collection and to poll with a bound. A module overrides ``emulator_options`` (a dict of
EmulatorOptions fields) to tune the kubelet, and ``manager_args`` to add flags.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import pytest_asyncio

from pycm.sim.auth import ADMIN_GROUP, UserInfo
from pycm.sim.server import Emulator, run_emulator
from tests.support.manager import ManagerProcess, poll, stop_manager
from tests.support.manager import start_manager as start_process

__all__ = ["Cluster", "Watch", "poll", "start_manager", "stop_manager"]

NS = "default"
RS_PATH = f"/apis/apps/v1/namespaces/{NS}/replicasets"
DEPLOY_PATH = f"/apis/apps/v1/namespaces/{NS}/deployments"
POD_PATH = f"/api/v1/namespaces/{NS}/pods"
_START_TIMEOUT = 30.0
# The manager authenticates as the kubeconfig's user, "admin"; the tests as another cluster
# admin, so a fault scoped to MANAGER_USER disturbs the controllers and never the checks.
MANAGER_USER = "admin"
_TESTER_TOKEN = "e2e-tester-token"


@dataclass
class Watch:
    """The events of one watch, recorded by a background task; ``check`` runs on each."""

    events: list[dict[str, Any]] = field(default_factory=list)
    # The collection as the watch saw it: name → latest object (deleted ones removed).
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)


@dataclass
class Cluster:
    emu: Emulator
    api: httpx.AsyncClient
    proc: subprocess.Popen[bytes]
    url: str
    trace: Path
    log: Path
    admin: dict[str, str]
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def alive(self) -> None:
        assert self.proc.poll() is None, self.log.read_text()

    async def get(self, path: str) -> dict[str, Any]:
        r = await self.api.get(path)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    async def items(self, path: str) -> list[dict[str, Any]]:
        return list((await self.get(path))["items"])

    async def create(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        r = await self.api.post(path, json=obj)
        assert r.status_code == 201, r.text
        body: dict[str, Any] = r.json()
        return body

    async def patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/merge-patch+json"}
        r = await self.api.patch(path, content=orjson.dumps(patch), headers=headers)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    async def metrics(self) -> str:
        async with httpx.AsyncClient(verify=False, timeout=5) as http:
            r = await http.get(f"{self.url}/metrics", headers=self.admin)
        assert r.status_code == 200, r.text
        return r.text

    def watch(
        self, path: str, check: Callable[[Watch, dict[str, Any]], None] | None = None
    ) -> Watch:
        """Watch ``path`` from now until the test ends; ``check(watch, event)`` on each event.

        The watch starts from the collection's current resourceVersion after an initial list,
        so ``objects`` is complete from the first event on; ``check`` appends to
        ``violations`` (asserting in a background task would go unseen).
        """
        watch = Watch()
        started = asyncio.Event()

        async def run() -> None:
            listed = await self.get(path)
            for item in listed["items"]:
                watch.objects[item["metadata"]["name"]] = item
            rv = listed["metadata"]["resourceVersion"]
            url = f"{path}?watch=1&resourceVersion={rv}"
            async with self.api.stream("GET", url, timeout=None) as response:
                started.set()
                async for line in response.aiter_lines():
                    if not line:
                        continue
                    event = orjson.loads(line)
                    if event["type"] in ("BOOKMARK", "ERROR"):
                        continue
                    name = event["object"]["metadata"]["name"]
                    if event["type"] == "DELETED":
                        watch.objects.pop(name, None)
                    else:
                        watch.objects[name] = event["object"]
                    watch.events.append(event)
                    if check is not None:
                        check(watch, event)

        task = asyncio.create_task(run(), name=f"e2e-watch {path}")
        self.tasks.append(task)
        return watch

    async def watching(self) -> None:
        """Wait until every watch begun so far is streaming (bounded)."""
        await poll(lambda: _streams(self), timeout=5)


async def _streams(cluster: Cluster) -> bool:
    # A watch streams once the emulator registered its watcher; good enough as a bound.
    await asyncio.sleep(0)
    return cluster.emu.store.watcher_count >= len(cluster.tasks)


@pytest.fixture
def emulator_options() -> dict[str, Any]:
    return {
        "tls": False,
        "kubelet": True,
        "pod_ready_delay": 0.0,
        "pod_terminate_delay": 0.0,
        "nodes": 2,
    }


@pytest.fixture
def manager_args() -> list[str]:
    return []


def start_manager(emu: Emulator, tmp: Path, extra: list[str]) -> ManagerProcess:
    # The tests' bursts of writes should not wait on the client's default 20 qps.
    limits = ["--kube-api-qps", "500", "--kube-api-burst", "1000"]
    return start_process(emu.kubeconfig_path, tmp, *limits, *extra, identity="e2e-controllers")


@pytest_asyncio.fixture
async def cluster(
    tmp_path: Path, emulator_options: dict[str, Any], manager_args: list[str]
) -> AsyncIterator[Cluster]:
    # Every module states the emulator's TLS and kubelet (their defaults are a real cluster's).
    unstated = {"tls", "kubelet"} - emulator_options.keys()
    assert not unstated, f"emulator_options must state {sorted(unstated)}"
    async with run_emulator(**emulator_options) as emu:
        manager = start_manager(emu, tmp_path, manager_args)
        admin = {"Authorization": f"Bearer {emu.admin_token}"}
        emu.authenticator.add(_TESTER_TOKEN, UserInfo("e2e-tester", "e2e", (ADMIN_GROUP,)))
        tester = {"Authorization": f"Bearer {_TESTER_TOKEN}"}
        async with httpx.AsyncClient(
            base_url=emu.url, headers=tester, timeout=10, verify=False
        ) as api:
            c = Cluster(emu, api, manager.proc, manager.url, manager.trace, manager.log, admin)
            try:
                async with httpx.AsyncClient(verify=False, timeout=5) as http:

                    async def ready() -> bool:
                        c.alive()
                        try:
                            r = await http.get(f"{manager.url}/readyz")
                        except httpx.TransportError:
                            return False
                        return r.status_code == 200

                    await poll(ready, timeout=_START_TIMEOUT)
                yield c
            finally:
                for task in c.tasks:
                    task.cancel()
                for task in c.tasks:
                    with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                        await task
                code = await stop_manager(manager)
        assert code == 0, manager.log.read_text()


def labels_match(selector: dict[str, str], labels: dict[str, str] | None) -> bool:
    labels = labels or {}
    return all(labels.get(k) == v for k, v in selector.items())
