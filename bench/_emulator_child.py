"""An emulator in a child process, so that only its own memory and pauses are measured
(bench.sim_memory, bench.sim_heap): it prints "URL TOKEN" and serves until its stdin closes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import orjson

_STOP_TIMEOUT = 30.0

# argv[1]: "freeze" installs pycm sim's collector policy (pycm.sim.heap), anything else leaves
# CPython's; argv[2]: run_emulator's keyword options, as JSON.
_SCRIPT = """
import asyncio, json, sys
from pycm.sim.heap import freeze_after_full_collections
from pycm.sim.server import run_emulator

if sys.argv[1] == "freeze":
    freeze_after_full_collections()

async def main():
    async with run_emulator(**json.loads(sys.argv[2])) as emu:
        print(emu.url, emu.admin_token, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


@contextmanager
def emulator_child(*, freeze: bool, **options: object) -> Iterator[tuple[str, str, int]]:
    """An emulator child (``run_emulator(**options)``, with ``pycm sim``'s collector policy if
    ``freeze``); yields (url, admin token, pid) and stops it on exit."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _SCRIPT,
            "freeze" if freeze else "default",
            orjson.dumps(options).decode(),
        ],
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
