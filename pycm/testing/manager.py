"""A manager run in-process for a test: the controllers it names, leader election off, no
serving; started, waited for and stopped cleanly.

The manager runs on an event loop of its own in a thread of its own, so that a test — plain
synchronous pytest — can drive the cluster and wait while the manager reconciles; pycm's own
code keeps to one loop in that thread. :meth:`ManagerHandle.stop` asks it to stop as SIGTERM
would and waits (bounded) for its exit status; a manager that fails to start (an init that
raises, a kind not served) fails :meth:`ManagerHandle.start` with its one-line reason.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from pycm.controller import ControllerDescriptor

__all__ = ["ManagerError", "ManagerHandle"]

START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


class ManagerError(AssertionError):
    """The in-process manager failed to start or to stop cleanly."""


class ManagerHandle:
    """One in-process manager against ``kubeconfig`` running ``controllers`` (names or
    aliases; plugins installed in the environment are known, ``descriptors`` are added)."""

    def __init__(
        self,
        kubeconfig: Path | str,
        controllers: Sequence[str],
        *,
        descriptors: Iterable[ControllerDescriptor] = (),
        args: Sequence[str] = (),
    ) -> None:
        from pycm.app.controllers import build_registry
        from pycm.app.options import ControllerManagerOptions

        registry = build_registry()
        for descriptor in descriptors:
            # (The same descriptor may be installed too: its entry point registered it.)
            if descriptor.name not in registry or registry.get(descriptor.name) is not descriptor:
                registry.register(descriptor)
        options = ControllerManagerOptions(registry)
        errors = options.parse(
            [
                f"--kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--secure-port=0",
                f"--controllers={','.join(controllers)}",
                *args,
            ]
        )
        errors += options.validate()
        if errors:
            raise ManagerError("; ".join(errors))
        self._config = options.config().complete()
        self._registry = registry
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._done: Future[int] = Future()
        self.manager: Any = None  # pycm.app.run.Manager, once started

    def start(self, timeout: float = START_TIMEOUT) -> ManagerHandle:
        """Start it and wait until its controllers run and their caches synced."""
        from pycm.app.run import Manager
        from pycm.trace.bus import Bus

        loop = self._loop = asyncio.new_event_loop()
        self.manager = Manager(self._config, bus=Bus(), registry=self._registry)

        def main() -> None:
            asyncio.set_event_loop(loop)
            try:
                self._done.set_result(loop.run_until_complete(self.manager.run()))
            except BaseException as exc:
                self._done.set_exception(exc)
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=main, name="pycm.testing manager", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._started():
            if self._done.done():
                raise ManagerError(f"the manager exited {self._exit()}: {self._reason()}")
            if time.monotonic() > deadline:
                self.stop(check=False)
                raise ManagerError(f"the manager did not start within {timeout:g}s")
            time.sleep(0.05)
        return self

    def _started(self) -> bool:
        ctx = self.manager.context
        if ctx is None or not ctx.informers_started.is_set():
            return False
        return all(
            c.running for c in list(ctx.queues.values())
        )  # workers run once their caches synced

    def _exit(self) -> str:
        try:
            return f"with status {self._done.result(timeout=0)}"
        except Exception as exc:
            return f"raising {type(exc).__name__}: {exc}"

    def _reason(self) -> str:
        return str(getattr(self.manager, "_fatal", "") or "no reason given")

    def call(self, coro: Any, timeout: float = 10.0) -> Any:
        """Run ``coro`` on the manager's loop and return its result (its state lives there)."""
        if self._loop is None or self._loop.is_closed():
            raise ManagerError("the manager is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def history(self, resource: str, namespace: str, name: str) -> str:
        """``pycm why``'s text for one object, from this manager's state (its history: what
        reconciled it and why), or a line saying there is none."""
        from pycm.trace.objref import ObjectRef
        from pycm.trace.why import object_report, render_text

        async def report() -> str:
            state = self.manager.state
            if state is None or not state.histories:
                return "(no object history in this manager)"
            ref = ObjectRef(resource, namespace, name)
            return render_text(object_report(state, ref, source=self.manager.identity))

        try:
            return f"history in the manager:\n{self.call(report())}"
        except Exception as exc:
            return f"(no history: {type(exc).__name__}: {exc})"

    def stop(self, *, check: bool = True, timeout: float = STOP_TIMEOUT) -> int:
        """Stop it as SIGTERM would and wait for its exit status; with ``check``, a status
        other than 0 (or a stop that does not finish) fails."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return 0
        if not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self.manager.request_stop)
            except RuntimeError:  # closed meanwhile: it has exited already
                pass
        thread.join(timeout)
        if thread.is_alive():
            raise ManagerError(f"the manager did not stop within {timeout:g}s")
        try:
            code = int(self._done.result(timeout=0))
        except Exception as exc:
            raise ManagerError(f"the manager failed: {type(exc).__name__}: {exc}") from exc
        if check and code != 0:
            raise ManagerError(f"the manager exited with status {code}: {self._reason()}")
        logging.getLogger(__name__).debug("manager stopped (%d)", code)
        return code
