"""End to end: the demo's replicas on the emulator, `pycm top` attached over HTTPS with the
emulator's token, sees a leader change after the leader is killed."""

from __future__ import annotations

import asyncio
import ssl

import pytest

from pycm.demo.chaos import Chaos, wait_for_file
from pycm.demo.orchestrator import DemoOptions, Orchestrator
from pycm.kube import load_config
from tests.tui.conftest import text_of
from tui.app import TopApp
from tui.sources import SseSource

pytestmark = pytest.mark.e2e


def _role_of(app: TopApp, replica: str) -> str:
    for line in text_of(app, "#overview-replicas").splitlines():
        cells = line.split()
        if cells and cells[0] == replica:
            return cells[1]
    return ""


@pytest.mark.asyncio
async def test_top_over_https_sees_the_leader_change_after_a_kill() -> None:
    options = DemoOptions(lease_duration="2s", renew_deadline="1500ms", retry_period="500ms")
    orchestrator = Orchestrator(options, lambda line: None)
    stop = asyncio.Event()
    run = asyncio.create_task(orchestrator.run(stop), name="demo")
    chaos = Chaos(orchestrator)
    try:
        async with asyncio.timeout(90):
            while len(orchestrator.replicas) < 3 or not orchestrator.verdict.leaders:
                assert not run.done()
                await asyncio.sleep(0.1)
            for replica in orchestrator.replicas:
                assert await wait_for_file(replica.cert_file, 20)
            config = await load_config(str(orchestrator.workdir / "kubeconfig"))
            sources = [
                SseSource(
                    r.url,
                    token=config.token or "",
                    verify=ssl.create_default_context(cafile=str(r.cert_file)),
                    name=r.identity,
                )
                for r in orchestrator.replicas
            ]
            app = TopApp(sources)
            async with app.run_test(size=(170, 45)) as pilot:
                first = orchestrator.verdict.leaders[0]
                while _role_of(app, first) != "leader":
                    await pilot.pause(0.2)
                message = await chaos.kill_leader()
                successor = message.split(": ", 1)[1].split(" ", 1)[0]
                assert successor != first
                while _role_of(app, successor) != "leader":
                    await pilot.pause(0.2)
                leader_view = app.feed.state.snapshot()["leases"]["kube-system/pycm"]
                assert leader_view["holder"] == successor
                assert leader_view["transitions"] >= 1
    finally:
        stop.set()
        await run
        await chaos.aclose()
