"""An emulator in a child process run from a script: it prints "URL TOKEN" and serves until its
stdin closes (bench.sim_memory, bench.sim_heap)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_STOP_TIMEOUT = 30.0


@contextmanager
def emulator_child(script: str, *args: str) -> Iterator[tuple[str, str, int]]:
    """Run ``python -c script *args``; yields (url, admin token, pid); stops it on exit."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        line = child.stdout.readline().split()  # bounded: the child prints or exits
        if len(line) != 2:
            raise RuntimeError(f"the emulator did not start: {line!r}")
        yield line[0], line[1], child.pid
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
            child.wait()
