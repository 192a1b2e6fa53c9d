"""Leader election end to end: three real ``pycm run`` processes on the emulator.

Timings: lease 2 s, renew deadline 1.5 s, retry 0.5 s; each bound gets ``SLACK`` on top.
The Lease's stored history (every version, from a watch) is checked in each test: one holder
at a time, never a term taken inside another's.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import pytest

from pycm.kube import LEASES, Client, load_config
from tests.e2e.conftest import (
    LEASE_DURATION,
    RENEW_DEADLINE,
    RETRY_PERIOD,
    SLACK,
    Cluster,
    assert_one_holder_at_a_time,
)

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

IDS = ("replica-a", "replica-b", "replica-c")
KILL_BOUND = LEASE_DURATION + 1.2 * RETRY_PERIOD
RELEASE_BOUND = 1.2 * RETRY_PERIOD


async def _elected(cluster: Cluster) -> str:
    await cluster.start_all(*IDS)
    await cluster.leases.wait_for(lambda h: h in IDS, timeout=10)
    return cluster.leases.holder


async def test_three_replicas_exactly_one_leader_lease_healthz_and_events(
    cluster: Cluster,
) -> None:
    leader = await _elected(cluster)
    await asyncio.sleep(2 * LEASE_DURATION)  # let every standby try for a while
    assert cluster.leases.holder == leader
    assert {s.holder for s in cluster.leases.history} == {leader}
    for replica in cluster.replicas.values():
        assert await cluster.healthz(replica, "/healthz/leaderElection") == 200
        # Each elector puts the timings its flags gave it in the trace, once (the viewers'
        # lease gauge reads them there).
        (configured,) = replica.events("lease.election_configured")
        assert (
            configured["lease_duration_s"],
            configured["renew_deadline_s"],
            configured["retry_period_s"],
        ) == (LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD)
        acquired = replica.events("lease.acquired")
        if replica.identity == leader:
            assert len(acquired) == 1
            assert replica.events("lease.renewed"), "the leader renews"
        else:
            assert acquired == [], f"{replica.identity} also claims to lead"
            attempts = replica.events("lease.acquire_attempt")
            # All three start at once: a standby whose create of the missing lease lost the race
            # sees that one conflict first (client-go: "error initially creating leader election
            # record"); every later attempt respects the holder.
            if attempts and attempts[0]["result"] == "error":
                assert "already exists" in attempts[0]["error"], attempts[0]
                attempts = attempts[1:]
            assert attempts and all(a["result"] == "held_by_other" for a in attempts)
            assert {a["holder"] for a in attempts} == {leader}


async def test_sigkill_leader_another_leads_within_lease_duration_plus_retry(
    cluster: Cluster,
) -> None:
    old = cluster.leader() if await _elected(cluster) else None
    assert old is not None
    killed = time.monotonic()
    old.process.kill()
    took = await cluster.leases.wait_for(
        lambda h: h not in ("", old.identity), timeout=KILL_BOUND + SLACK + 5, after=killed
    )
    assert took - killed <= KILL_BOUND + SLACK, f"failover took {took - killed:.2f}s"
    assert await old.exit_code(5) == -signal.SIGKILL
    assert_one_holder_at_a_time(cluster.leases.history, LEASE_DURATION)


async def test_sigterm_leader_releases_and_hands_over_within_a_retry_period(
    cluster: Cluster,
) -> None:
    old = cluster.leader() if await _elected(cluster) else None
    assert old is not None
    sent = time.monotonic()
    old.process.terminate()
    assert await old.exit_code(10) == 0, old.log()
    took = await cluster.leases.wait_for(
        lambda h: h not in ("", old.identity), timeout=RELEASE_BOUND + SLACK + 5, after=sent
    )
    assert old.events("lease.released"), "ReleaseOnCancel wrote an empty holder"
    assert "" in cluster.leases.holders_after(sent), "the lease was released first"
    assert took - sent <= RELEASE_BOUND + SLACK, f"handover took {took - sent:.2f}s"
    assert_one_holder_at_a_time(cluster.leases.history, LEASE_DURATION)


async def test_sigstop_leader_others_take_over_and_it_exits_nonzero_on_sigcont(
    cluster: Cluster,
) -> None:
    old = cluster.leader() if await _elected(cluster) else None
    assert old is not None
    stopped = time.monotonic()
    os.kill(old.process.pid, signal.SIGSTOP)
    took = await cluster.leases.wait_for(
        lambda h: h not in ("", old.identity), timeout=KILL_BOUND + SLACK + 5, after=stopped
    )
    assert took - stopped <= KILL_BOUND + SLACK
    await asyncio.sleep(RENEW_DEADLINE)  # well past its renew deadline
    takeover_wall_ns = time.time_ns() - int((time.monotonic() - took) * 1e9)
    os.kill(old.process.pid, signal.SIGCONT)
    code = await old.exit_code(RENEW_DEADLINE + SLACK + 5)
    assert code not in (0, None), f"the old leader exited {code}"
    await asyncio.sleep(2 * RETRY_PERIOD)  # anything it might still have written has arrived
    after = cluster.leases.holders_after(took)
    assert old.identity not in after, f"the old leader wrote the lease again: {after}"
    # A renew whose request started after the takeover. (Not its event's ts: a response that
    # arrived just before SIGSTOP is announced after SIGCONT, and its latency spans the pause.)
    late_renewals = [
        e
        for e in old.events("lease.renewed")
        if int(e["ts"]) - int(float(e["latency_ms"]) * 1e6) > takeover_wall_ns
    ]
    assert late_renewals == [], "the old leader renewed after the takeover"
    assert old.events("lease.lost")
    assert_one_holder_at_a_time(cluster.leases.history, LEASE_DURATION)


async def test_api_latency_above_renew_deadline_for_leader_user_it_steps_down(
    cluster: Cluster,
) -> None:
    old = cluster.leader() if await _elected(cluster) else None
    assert old is not None
    added = time.monotonic()
    cluster.emu.faults.add(
        kind="latency",
        seconds=RENEW_DEADLINE * 2,
        user=old.identity,
        resource="leases",
        duration=LEASE_DURATION + RENEW_DEADLINE + 10,
    )
    code = await old.exit_code(RENEW_DEADLINE + LEASE_DURATION + SLACK + 5)
    assert code == 1, old.log()
    failed = old.events("lease.renew_failed")
    assert failed, "the renewals failed"
    assert old.events("lease.lost")
    took = await cluster.leases.wait_for(
        lambda h: h not in ("", old.identity), timeout=10, after=added
    )
    assert took - added <= RENEW_DEADLINE + KILL_BOUND + SLACK
    assert_one_holder_at_a_time(cluster.leases.history, LEASE_DURATION)


async def _lines_until(stream: asyncio.StreamReader, want: str, timeout: float) -> list[str]:
    lines: list[str] = []
    async with asyncio.timeout(timeout):
        while not any(want in line for line in lines):
            raw = await stream.readline()
            if not raw:
                break
            lines.append(raw.decode())
    return lines


async def test_lease_watch_prints_scripted_transitions_and_warns_on_flap(
    cluster: Cluster,
) -> None:
    kubeconfig = cluster.kubeconfig_for("watcher")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pycm",
        "lease",
        "watch",
        "kube-system/scripted",
        "--kubeconfig",
        str(kubeconfig),
        "--flap-threshold",
        "2",
        "--flap-window",
        "1h",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        # On a stuck exit the test sends SIGABRT: faulthandler then prints every thread's stack.
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )
    try:
        assert proc.stdout is not None
        first = await _lines_until(proc.stdout, "does not exist yet", 20)
        assert "waiting" in first[-1]
        config = await load_config(str(cluster.kubeconfig_for("scripter")))
        async with await Client.connect(config) as client:
            lease = await client.create(
                LEASES,
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": "scripted", "namespace": "kube-system"},
                    "spec": {
                        "holderIdentity": "x",
                        "leaseDurationSeconds": 15,
                        "leaseTransitions": 0,
                        "renewTime": "2026-01-01T00:00:00.000000Z",
                    },
                },
            )
            got = await _lines_until(proc.stdout, "holder=x", 10)
            assert "transitions=0 duration=15s" in got[-1]
            for n, holder in enumerate(("y", "z", "x"), start=1):
                lease["spec"] |= {
                    "holderIdentity": holder,
                    "leaseTransitions": n,
                    "renewTime": f"2026-01-01T00:00:0{2 * n}.000000Z",
                }
                lease = await client.update(LEASES, lease)
        out = await _lines_until(proc.stdout, "WARNING flap", 10)
        changes = [line for line in got + out if "holder=" in line]
        assert [line.split("holder=")[1].split()[0] for line in changes] == ["x", "y", "z", "x"]
        assert "transitions=3" in changes[-1] and "(leader changed from z)" in changes[-1]
        assert "renew-interval=2.00s" in changes[-1]
        assert out[-1].strip() == "WARNING flap: 3 transitions in 1h0m0s"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.send_signal(signal.SIGABRT)
            assert proc.stderr is not None
            stacks = (await asyncio.wait_for(proc.stderr.read(), 10)).decode(errors="replace")
            raise AssertionError(f"pycm lease watch did not exit on SIGINT:\n{stacks}") from None
    assert code == 0


async def test_lease_watch_resumes_after_dropped_watch_and_410(cluster: Cluster) -> None:
    config = await load_config(str(cluster.kubeconfig_for("scripter")))
    async with await Client.connect(config) as client:
        lease = await client.create(
            LEASES,
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": "resumed", "namespace": "kube-system"},
                "spec": {"holderIdentity": "p", "leaseDurationSeconds": 15},
            },
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "pycm",
            "lease",
            "watch",
            "kube-system/resumed",
            "--kubeconfig",
            str(cluster.kubeconfig_for("watcher")),
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            await _lines_until(proc.stdout, "holder=p", 20)
            await asyncio.sleep(0.5)  # its watch is open
            cluster.emu.faults.add(kind="drop-watches")
            lease["spec"]["holderIdentity"] = "q"
            lease = await client.update(LEASES, lease)
            assert "holder=q" in (await _lines_until(proc.stdout, "holder=q", 10))[-1]
            # Hold the watcher's reconnect (a partition of its user), write r and s, forget the
            # history: its watch from q's version then gets 410 and it must re-list, so it
            # shows s and never r (a resumed watch would have replayed r).
            cluster.emu.faults.add(kind="partition", user="watcher", duration=1.5, hold=10)
            cluster.emu.faults.add(kind="drop-watches")
            for holder in ("r", "s"):
                lease["spec"]["holderIdentity"] = holder
                lease = await client.update(LEASES, lease)
            cluster.emu.faults.add(kind="compact")
            got = await _lines_until(proc.stdout, "holder=s", 10)
            assert "(leader changed from q)" in got[-1]
            assert not any("holder=r" in line for line in got)
        finally:
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 10)
        assert code == 0


async def test_lease_watch_once_prints_the_current_state_and_exits_0(cluster: Cluster) -> None:
    config = await load_config(str(cluster.kubeconfig_for("scripter")))
    async with await Client.connect(config) as client:
        await client.create(
            LEASES,
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": "once", "namespace": "kube-system"},
                "spec": {"holderIdentity": "solo", "leaseDurationSeconds": 7},
            },
        )
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "pycm", "lease", "watch", "kube-system/once", "--once"),
        *("--kubeconfig", str(cluster.kubeconfig_for("watcher"))),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0
    lines = out.decode().splitlines()
    assert len(lines) == 1 and "holder=solo transitions=0 duration=7s" in lines[0]
