"""The stream client against a real ``pycm run``: typed statuses for a bad token and an
untrusted certificate, and a resume across a restart of the manager without duplicates."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from pycm.trace.events import Event
from pycm.trace.stream import SourceState, SourceStatus, StreamClient
from pycm.util.backoff import Backoff
from tests.support.manager import free_port, poll, start_manager, stop_manager

pytestmark = pytest.mark.e2e

FAST = Backoff(0.2, factor=2.0, cap=1.0)


class Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.snapshots = 0
        self.statuses: list[SourceStatus] = []

    def push(self, source: str, events: Sequence[Event]) -> None:
        self.events.extend(events)

    def push_snapshot(self, source: str, snapshot: Any) -> None:
        self.snapshots += 1

    def set_status(self, source: str, status: SourceStatus) -> None:
        self.statuses.append(status)

    def saw(self, state: SourceState) -> bool:
        return any(s.state is state for s in self.statuses)


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False, pod_ready_delay=0.0) as emu:
        yield emu


async def _watch(client: StreamClient, sink: Sink) -> asyncio.Task[None]:
    return asyncio.create_task(client.run(sink), name=f"stream {client.name}")


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def _runs(events: list[Event]) -> list[list[int]]:
    """The seqs of the events, split where they begin again (a new process)."""
    runs: list[list[int]] = [[]]
    for seq in (e.seq for e in events if e.seq):
        if runs[-1] and seq <= runs[-1][-1]:
            runs.append([])
        runs[-1].append(seq)
    return runs


@pytest.mark.asyncio
async def test_stream_client_against_pycm_run_statuses_and_resume_across_a_restart(
    cluster: Any, tmp_path: Path
) -> None:
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    manager = start_manager(cluster.kubeconfig_path, tmp_path / "one", "--secure-port", str(port))
    good, bad_token, untrusted = Sink(), Sink(), Sink()
    tasks = [
        await _watch(
            StreamClient(
                url, name="good", token=cluster.admin_token, verify=False, since=0, backoff=FAST
            ),
            good,
        ),
        await _watch(StreamClient(url, token="nope", verify=False, backoff=FAST), bad_token),
        await _watch(StreamClient(url, token=cluster.admin_token, backoff=FAST), untrusted),
    ]
    try:

        async def first_run_started() -> bool:
            assert manager.proc.poll() is None, manager.log.read_text()
            return any(e.KIND == "informers.started" for e in good.events)

        await poll(first_run_started, timeout=60)
        await poll(lambda: _async(bad_token.saw(SourceState.UNAUTHORIZED)), timeout=30)
        await poll(lambda: _async(untrusted.saw(SourceState.TLS_ERROR)), timeout=30)
        assert not bad_token.events and not untrusted.events
        assert (
            "401"
            in next(s for s in bad_token.statuses if s.state is SourceState.UNAUTHORIZED).reason
        )
        assert good.snapshots >= 1

        assert await stop_manager(manager) == 0
        await poll(lambda: _async(good.statuses[-1].state is not SourceState.CONNECTED))
        seen_before = len(good.events)
        manager = start_manager(
            cluster.kubeconfig_path, tmp_path / "two", "--secure-port", str(port)
        )

        async def second_run_started() -> bool:
            assert manager.proc.poll() is None, manager.log.read_text()
            later = good.events[seen_before:]
            return any(e.KIND == "informers.started" for e in later)

        await poll(second_run_started, timeout=60)
    finally:
        for task in tasks:
            await _stop(task)
        await stop_manager(manager)

    runs = _runs(good.events)
    assert len(runs) == 2, [r[:3] for r in runs]
    first, second = runs
    # each run's events arrived once, in order; the second from its own start
    assert first == sorted(set(first))
    assert second == sorted(set(second))
    assert second[0] == 1
    assert good.statuses[-1].state is SourceState.CONNECTED


async def _async(value: bool) -> bool:
    return value
