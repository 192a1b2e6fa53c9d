"""``pycm why`` against a real ``pycm run`` and an emulator: live (``--server``) and from the
manager's ``--trace-file`` recording; bad input exits 2 with one line."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from pycm.sim.server import run_emulator
from tests.support.manager import poll, start_manager, stop_manager

pytestmark = [pytest.mark.e2e]

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
REPLICASETS = "/apis/apps/v1/namespaces/default/replicasets"


def _deployment(replicas: int) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }


def _created_by_deployment(chain: list[dict[str, Any]]) -> bool:
    return any(
        (c["what"], c["controller"], c["verb"]) == ("write", "deployment", "create") for c in chain
    )


def why(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pycm", "why", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.asyncio
async def test_why_live_and_on_the_recording_crosses_deployment_to_replicaset(
    tmp_path: Path,
) -> None:
    async with run_emulator(tls=False, kubelet=False, pod_ready_delay=0.0) as emu:
        manager = start_manager(emu.kubeconfig_path, tmp_path)
        admin = {"Authorization": f"Bearer {emu.admin_token}"}
        live = ["--server", manager.url, "--token", emu.admin_token, "--insecure-skip-tls-verify"]
        try:
            async with httpx.AsyncClient(base_url=emu.url, headers=admin) as api:
                created = await api.post(DEPLOYMENTS, json=_deployment(1))
                assert created.status_code == 201, created.text

                async def replicaset() -> str:
                    items = (await api.get(REPLICASETS)).json()["items"]
                    return str(items[0]["metadata"]["name"]) if items else ""

                rs = await poll(replicaset, timeout=30)
                ref = f"replicasets/default/{rs}"

                async def explained() -> dict[str, Any] | None:
                    assert manager.proc.poll() is None, manager.log.read_text()
                    done = await asyncio.to_thread(why, ref, *live, "-o", "json")
                    if done.returncode != 0:
                        return None
                    report: dict[str, Any] = json.loads(done.stdout)
                    # The newest reconcile's story reaches the deployment's create (through the
                    # RS's own status writes, or a requeue when a loaded run's cache was behind
                    # its last write: the staleness guard).
                    chain = report["chain"]
                    found = chain[0]["what"] == "reconcile" and _created_by_deployment(chain)
                    return report if found else None

                report = await poll(explained, timeout=30, interval=0.5)
                # Back across controllers: the deployment's reconcile created the ReplicaSet, and
                # the deployment was created by the outside writer its managedFields name (this
                # test's httpx client). (pycm.trace.causes matches an event that comes before
                # its write's response to the write in flight.)
                links = [
                    c
                    for c in report["chain"]
                    if (c["what"], c["controller"], c["verb"]) == ("write", "deployment", "create")
                ]
                assert len(links) == 1, report["chain"]
                (link,) = links
                assert (link["key"], link["resource"], link["object"]) == (
                    "default/web",
                    "replicasets",
                    f"default/{rs}",
                )
                assert link["trace_id"] and link["ts"] > 0  # its reconcile, found
                # Created before or after the manager's first list: the informer's initial list,
                # else the writer the deployment names.
                last = report["chain"][-1]
                assert last["what"] in ("writer", "informer"), report["chain"]
                if last["what"] == "writer":
                    assert last["writer"] == "python-httpx", report["chain"]
                else:
                    assert last["event"] == "initial", report["chain"]
                assert {s["step"] for s in report["steps"]} >= {"write", "watch", "reconcile"}
                assert report["sources"] == [{"source": "e2e-manager", "error": ""}]

                text = await asyncio.to_thread(why, ref, *live)
                assert text.returncode == 0, text.stderr
                lines = text.stdout.splitlines()
                assert lines[0].startswith(f"replicasets default/{rs} reconciled by replicaset")
                assert lines[1].startswith(
                    ("  because replicaset ", "  because deployment ", "  because its previous ")
                ), text.stdout
                assert any(
                    line.lstrip().startswith("because deployment default/web's reconcile")
                    and line.endswith(f"created replicasets default/{rs} at RV {link['rv']}")
                    for line in lines
                ), text.stdout

                missing = await asyncio.to_thread(why, "deployments/default/nothing", *live)
                assert missing.returncode == 1
                assert "no step of it" in missing.stdout
                for bad in ("deployments/default", "gizmos/default/web", "a/b/c/d"):
                    done = await asyncio.to_thread(why, bad, *live)
                    assert done.returncode == 2, (bad, done.stdout, done.stderr)
                    assert len(done.stderr.splitlines()) == 1, done.stderr
        finally:
            assert await stop_manager(manager) == 0, manager.log.read_text()

    recorded = await asyncio.to_thread(why, ref, "--replay", str(manager.trace), "-o", "json")
    assert recorded.returncode == 0, recorded.stderr
    replayed = json.loads(recorded.stdout)
    assert replayed["chain"][0]["what"] == "reconcile"
    assert _created_by_deployment(replayed["chain"]), replayed["chain"]
    assert link["trace_id"] in [c["trace_id"] for c in replayed["chain"]]
    bad = await asyncio.to_thread(why, "gizmos/default/web", "--replay", str(manager.trace))
    assert (bad.returncode, len(bad.stderr.splitlines())) == (2, 1)
    nothing = await asyncio.to_thread(why, ref, "--replay", str(tmp_path / "none.jsonl"))
    assert nothing.returncode == 2
