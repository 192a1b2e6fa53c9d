"""Child processes of the demo: started in their own session, stopped in a bounded way.

Each child gets its own session (``start_new_session``) so a Ctrl-C in the terminal reaches only
the demo, which then stops the children in order — SIGTERM, then SIGKILL for whatever has not
exited within ``STOP_TIMEOUT`` — instead of every process racing its own shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Sequence
from pathlib import Path

from pycm.util.ports import free_port

__all__ = ["STOP_TIMEOUT", "Child", "free_port"]

# A replica's ordered shutdown (release the lease, stop controllers) takes well under a second
# with the demo's timings; 8 s leaves room for a slow machine before the SIGKILL.
STOP_TIMEOUT = 8.0


class Child:
    """One child process. Invariant: ``process`` is set from :meth:`start` on; ``stopping`` is
    set before the demo signals it, so an exit after that is not a crash."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.process: asyncio.subprocess.Process | None = None
        self.stopping = False
        self.generation = 0  # how many times it was started

    async def start(self, *, capture_stdout: bool = False) -> None:
        log = None
        if self.log_path is not None:
            log = self.log_path.open("ab")
        stdout = asyncio.subprocess.PIPE if capture_stdout else (log or asyncio.subprocess.DEVNULL)
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=stdout,
                stderr=log or asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            if log is not None:
                log.close()  # the child holds its own descriptor
        self.generation += 1
        self.stopping = False

    @property
    def pid(self) -> int:
        return self.process.pid if self.process is not None else 0

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def signal(self, sig: signal.Signals) -> None:
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)

    async def wait(self) -> int:
        assert self.process is not None
        return await self.process.wait()

    async def stop(self, grace: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM, then SIGKILL after ``grace`` s; the exit status (None if never started)."""
        if self.process is None:
            return None
        self.stopping = True
        if self.process.returncode is None:
            self.signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), grace)
            except TimeoutError:
                self.signal(signal.SIGKILL)
                await self.process.wait()
        return self.process.returncode
