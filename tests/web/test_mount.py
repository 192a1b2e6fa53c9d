"""The dashboard mounted in ``pycm run``: /dashboard on the secure port, behind the same checks
as /debug/pycm/*, fed by the manager's own bus and reducer; a SIGTERM ends open streams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from tests.support.manager import poll, start_manager, stop_manager
from tests.web.streams import parse_frames

pytestmark = pytest.mark.e2e


@pytest_asyncio.fixture
async def emulator() -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False, pod_ready_delay=0.0) as emu:
        yield emu


@pytest.mark.asyncio
async def test_mount_serves_the_managers_own_events_and_state_and_stops_with_streams_open(
    emulator: Any, tmp_path: Path
) -> None:
    manager = start_manager(emulator.kubeconfig_path, tmp_path, identity="mounted")
    admin: dict[str, str] = {"Authorization": f"Bearer {emulator.admin_token}"}
    stopped = False
    try:
        async with httpx.AsyncClient(verify=False, timeout=10) as http:

            async def serving() -> bool:
                try:
                    r = await http.get(f"{manager.url}/healthz")
                except httpx.TransportError:
                    assert manager.proc.poll() is None, manager.log.read_text()
                    return False
                return r.status_code == 200

            await poll(serving, timeout=60)
            # The dashboard is its own door behind the chain: no credentials → 401, a bad
            # token → 401 (the chain), the admin's bearer token → in.
            assert (await http.get(f"{manager.url}/dashboard/api/state")).status_code == 401
            bad = {"Authorization": "Bearer nope"}
            assert (
                await http.get(f"{manager.url}/dashboard/api/state", headers=bad)
            ).status_code == 401
            assert (
                await http.get(f"{manager.url}/dashboard/api/state", headers=admin)
            ).status_code == 200
            # A login with the token (TokenReview, then SubjectAccessReview) gives a session
            # cookie that is enough on its own from then on.
            login = await http.post(
                f"{manager.url}/dashboard/login", data={"token": emulator.admin_token}
            )
            assert login.status_code == 303, login.text
            assert "pycm_session" in http.cookies  # https: the Secure cookie is sent from now on
            admin = {}

            async def informers_synced() -> dict[str, Any] | None:
                r = await http.get(f"{manager.url}/dashboard/api/state", headers=admin)
                assert r.status_code == 200, r.text
                doc = r.json()
                informers = doc["sources"][0]["snapshot"].get("informers", {}).get("mounted", {})
                synced = informers and all(i.get("synced") for i in informers.values())
                return dict(doc) if synced else None

            doc = await poll(informers_synced, timeout=60)
            assert doc["mode"] == "live"
            assert [s["name"] for s in doc["sources"]] == ["mounted"]
            assert doc["sources"][0]["status"]["state"] == "connected"

            async with http.stream(
                "GET", f"{manager.url}/dashboard/api/stream", headers=admin
            ) as response:
                assert response.status_code == 200
                data = b""
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if b"event: events" in data and data.endswith(b"\n\n"):
                        break
                frames = parse_frames(data)
                assert frames[0][0] == "hello"
                events = [e for name, _, d in frames if name == "events" for e in d["events"]]
                seqs = [e["seq"] for e in events]
                assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
                # (flags.parsed is emitted before the manager names its bus: no instance)
                assert {e["instance"] for e in events} - {""} == {"mounted"}
                assert any(e["kind"] == "informer.synced" for e in events)
                assert all(e["line"] for e in events)
                # SIGTERM while this stream is open: the manager ends it and stops promptly.
                code = await stop_manager(manager, timeout=20)
                stopped = True
                assert code == 0, manager.log.read_text()
    finally:
        if not stopped:
            await stop_manager(manager)
