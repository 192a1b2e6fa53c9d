"""One redaction rule, end to end: ``pycm run --otlp-endpoint http://user:SECRET@…`` shows the
secret in none of the four places a flag value reaches — /configz, the ``flags.parsed`` event
(the --trace-file recording), the log, the exported spans — and still exports to the endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from pycm.trace.recorder import read_events
from tests.otel.receivers import otlp_grpc_receiver
from tests.support.manager import poll, start_manager, stop_manager

pytestmark = pytest.mark.e2e

SECRET = "S3cr3tPassw0rd"


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False, pod_ready_delay=0.0) as emu:
        yield emu


@pytest.mark.asyncio
async def test_run_otlp_endpoint_password_withheld_from_configz_event_log_and_spans(
    cluster: Any, tmp_path: Path
) -> None:
    async with otlp_grpc_receiver() as receiver:
        endpoint = receiver.endpoint.replace("http://", f"http://user:{SECRET}@")
        manager = start_manager(
            cluster.kubeconfig_path,
            tmp_path,
            "--otlp-endpoint",
            endpoint,
            "--trace-sample-ratio",
            "1",
            "--v=4",
        )
        admin = {"Authorization": f"Bearer {cluster.admin_token}"}
        try:
            async with httpx.AsyncClient(verify=False, timeout=5) as http:

                async def configz() -> httpx.Response | None:
                    try:
                        r = await http.get(f"{manager.url}/configz", headers=admin)
                    except httpx.TransportError:
                        assert manager.proc.poll() is None, manager.log.read_text()
                        return None
                    return r if r.status_code == 200 else None

                served = await poll(configz, timeout=30)
            spans = await receiver.wait_for(
                lambda s: any(x.span.name == "flags.parsed" for x in s), 30
            )
        finally:
            await stop_manager(manager)
    # 1. /configz
    assert SECRET not in served.text
    shown = served.json()["pycm"]["otlp-endpoint"]
    assert shown == endpoint.replace(SECRET, "xxxxx")
    # 2. the flags.parsed event, and every other event recorded
    [flags] = [e for e in read_events(manager.trace) if e.KIND == "flags.parsed"]
    assert f"otlp-endpoint={endpoint.replace(SECRET, 'xxxxx')}" in flags.changed  # type: ignore[attr-defined]
    assert SECRET not in manager.trace.read_text()
    # 3. the log (at -v 4, request logging included)
    log = manager.log.read_text()
    assert "exporting spans to http://user:xxxxx@127.0.0.1:" in log
    assert SECRET not in log
    # 4. the spans the collector received (names, attributes, resource, events)
    assert spans and all(SECRET not in str(s.span) + str(s.resource) for s in spans)
