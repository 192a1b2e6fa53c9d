"""``pycm dashboard --server … --server …`` against real ``pycm run`` replicas: each replica is a
labelled source with its own state; a replica that stops shows as not connected; a token the
replicas refuse shows as unauthorized."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.cli import build_parser
from pycm.sim.server import run_emulator
from tests.support.manager import ManagerProcess, poll, start_manager, stop_manager
from web.command import plan_from
from web.server import serve

pytestmark = pytest.mark.e2e


@pytest_asyncio.fixture
async def emulator() -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False, pod_ready_delay=0.0) as emu:
        yield emu


async def _serving(manager: ManagerProcess, http: httpx.AsyncClient) -> bool:
    try:
        return (await http.get(f"{manager.url}/healthz")).status_code == 200
    except httpx.TransportError:
        assert manager.proc.poll() is None, manager.log.read_text()
        return False


class _Dashboard:
    def __init__(self, argv: list[str]) -> None:
        self.plan = plan_from(build_parser().parse_args(["dashboard", *argv]))
        self.lines: list[str] = []
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(serve(self.plan, stop=self.stop, out=self.lines.append))
        self.base = ""

    async def login(self, http: httpx.AsyncClient) -> dict[str, str]:
        await poll(self._printed, timeout=30)
        url = self.lines[0].split("serving ", 1)[1]
        self.base = url.split("/dashboard/", 1)[0]
        response = await http.get(url)
        assert response.status_code == 303
        return {"Cookie": response.headers["set-cookie"].split(";", 1)[0]}

    async def _printed(self) -> bool:
        assert not self.task.done(), self.task
        return bool(self.lines)

    async def close(self) -> None:
        self.stop.set()
        assert await asyncio.wait_for(self.task, 20) == 0


@pytest.mark.asyncio
async def test_fanin_two_replicas_are_separate_labelled_sources(
    emulator: Any, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text(emulator.admin_token)
    (tmp_path / "m1").mkdir()
    (tmp_path / "m2").mkdir()
    m1 = start_manager(emulator.kubeconfig_path, tmp_path / "m1", identity="m1")
    m2 = start_manager(emulator.kubeconfig_path, tmp_path / "m2", identity="m2")
    dashboard: _Dashboard | None = None
    try:
        async with httpx.AsyncClient(verify=False, timeout=10) as http:
            await poll(lambda: _serving(m1, http), timeout=60)
            await poll(lambda: _serving(m2, http), timeout=60)
            argv = ["--server", m1.url, "--server", m2.url, "--token-file", str(token)]
            argv += ["--insecure-skip-tls-verify", "--listen", "127.0.0.1:0"]
            dashboard = _Dashboard(argv)
            cookie = await dashboard.login(http)
            names = [m.url.split("://", 1)[1] for m in (m1, m2)]

            async def both_synced() -> dict[str, Any] | None:
                r = await http.get(f"{dashboard.base}/dashboard/api/state", headers=cookie)
                assert r.status_code == 200, r.text
                doc = dict(r.json())
                for source, identity in zip(doc["sources"], ("m1", "m2"), strict=True):
                    informers = source["snapshot"].get("informers", {}).get(identity, {})
                    if not informers or not all(i.get("synced") for i in informers.values()):
                        return None
                return doc

            doc = await poll(both_synced, timeout=60)
            assert doc["mode"] == "fanin"
            assert [s["name"] for s in doc["sources"]] == names
            for source, identity in zip(doc["sources"], ("m1", "m2"), strict=True):
                assert source["status"]["state"] == "connected"
                # Each source holds its own replica only.
                assert set(source["snapshot"]["instances"]) - {""} == {identity}

            # A replica that stops is shown as such; the other stays connected.
            assert await stop_manager(m2) == 0

            async def m2_down() -> bool:
                r = await http.get(f"{dashboard.base}/dashboard/api/state", headers=cookie)
                states = [s["status"]["state"] for s in r.json()["sources"]]
                return bool(states[0] == "connected" and states[1] != "connected")

            await poll(m2_down, timeout=30)
    finally:
        if dashboard is not None:
            await dashboard.close()
        await stop_manager(m1)
        if m2.proc.poll() is None:
            await stop_manager(m2)


@pytest.mark.asyncio
async def test_fanin_refused_token_shows_the_source_unauthorized(
    emulator: Any, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("not-a-valid-token")
    manager = start_manager(emulator.kubeconfig_path, tmp_path, identity="m1")
    dashboard: _Dashboard | None = None
    try:
        async with httpx.AsyncClient(verify=False, timeout=10) as http:
            await poll(lambda: _serving(manager, http), timeout=60)
            argv = ["--server", manager.url, "--token-file", str(token)]
            argv += ["--insecure-skip-tls-verify", "--listen", "127.0.0.1:0"]
            dashboard = _Dashboard(argv)
            cookie = await dashboard.login(http)

            async def unauthorized() -> bool:
                r = await http.get(f"{dashboard.base}/dashboard/api/state", headers=cookie)
                return bool(r.json()["sources"][0]["status"]["state"] == "unauthorized")

            await poll(unauthorized, timeout=30)
    finally:
        if dashboard is not None:
            await dashboard.close()
        await stop_manager(manager)
