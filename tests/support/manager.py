"""One way to run ``pycm run`` as a process in end-to-end tests, and to wait on conditions.

``start_manager`` runs the manager against an emulator's kubeconfig with no leader election,
the secure port on a free 127.0.0.1 port, ``--trace-file`` and its output in a log file;
``stop_manager`` sends SIGTERM and waits (bounded) for the exit status. ``poll`` waits for a
condition with a bound and says what it last saw. ``record_traceparents`` collects the W3C
``traceparent`` headers an in-process emulator receives.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pycm.util.ports import free_port

__all__ = [
    "ManagerProcess",
    "free_port",
    "poll",
    "record_traceparents",
    "start_manager",
    "stop_manager",
]

STOP_TIMEOUT = 20.0


def record_traceparents(emu: Any) -> list[str]:
    """The ``traceparent`` headers of every request ``emu`` serves from now on, in order."""
    seen: list[str] = []

    async def record(request: Any) -> None:
        header = request.headers.get("traceparent")
        if header:
            seen.append(header)

    emu.before_request.insert(0, record)
    return seen


async def poll(
    fn: Callable[[], Awaitable[Any]], *, timeout: float = 20.0, interval: float = 0.05
) -> Any:
    """Call ``fn`` until it returns something truthy (returned) or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await fn()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")


@dataclass
class ManagerProcess:
    proc: subprocess.Popen[bytes]
    url: str  # the secure port's https://127.0.0.1:<port>
    trace: Path
    log: Path
    out: IO[bytes]


def start_manager(
    kubeconfig: str | Path, tmp: Path, *extra: str, identity: str = "e2e-manager"
) -> ManagerProcess:
    port = free_port()
    trace, log = tmp / "trace.jsonl", tmp / "manager.log"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    out = log.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pycm",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--leader-elect=false",
            "--secure-port",
            str(port),
            "--bind-address",
            "127.0.0.1",
            "--trace-file",
            str(trace),
            "--identity",
            identity,
            *extra,
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        env=env,
    )
    return ManagerProcess(proc, f"https://127.0.0.1:{port}", trace, log, out)


async def stop_manager(manager: ManagerProcess, timeout: float = STOP_TIMEOUT) -> int:
    """SIGTERM, then the exit status; a manager that does not stop in time is killed and the
    test fails."""
    proc = manager.proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            raise AssertionError(f"pycm run did not stop within {timeout:g}s of SIGTERM")
    finally:
        manager.out.close()
    return proc.returncode
