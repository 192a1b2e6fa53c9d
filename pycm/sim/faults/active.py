"""The fault set of one emulator: its Python API, the faults' lifetimes (bounds, the expiry
ticker) and the request hook that lets the active ones act, phase by phase."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pycm.sim import errors
from pycm.sim.auth import TokenAuthenticator, bearer_token
from pycm.sim.faults.endpoint import FaultsEndpoint
from pycm.sim.faults.fault import TICK, Action, Fault, Intercepted, LastingFault
from pycm.sim.faults.kinds import PHASES, parse
from pycm.sim.kubelet import Kubelet
from pycm.sim.requestinfo import request_info, request_path
from pycm.sim.store import Store
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.escape import escape_control

__all__ = ["Faults"]

log = logging.getLogger("pycm.sim")


class Faults:
    """The active faults of one emulator, its request hook and its admin endpoint."""

    def __init__(
        self,
        store: Store,
        authenticator: TokenAuthenticator,
        clock: Clock = REAL_CLOCK,
        kubelet: Callable[[], Kubelet | None] = lambda: None,
        seed: int = 0,
    ) -> None:
        self.store = store
        self.authenticator = authenticator
        self.clock = clock
        self.kubelet = kubelet
        self.rng = random.Random(seed)
        self._ids = itertools.count(1)
        # Invariant: every fault in `_active` is lasting and not yet past a bound.
        self._active: dict[str, LastingFault] = {}
        self._added = asyncio.Event()  # set on every addition (wakes the idle ticker)
        self._endpoint = FaultsEndpoint(self)

    # ---------------------------------------------------------------- the Python API

    @property
    def active(self) -> list[LastingFault]:
        self.expire()
        return list(self._active.values())

    def get(self, fault_id: str) -> LastingFault | None:
        """The active fault ``fault_id``, or None."""
        self.expire()
        return self._active.get(fault_id)

    def add(self, spec: Mapping[str, Any] | None = None, /, **fields: Any) -> Fault:
        """Add a fault from ``spec`` and/or keyword fields (the JSON field names; ``retryAfter``
        may be given as ``retry_after``). Raises APIError 422 for an invalid or unbounded one."""
        merged = dict(spec or {})
        if "retry_after" in fields:
            fields["retryAfter"] = fields.pop("retry_after")
        merged.update(fields)
        fault = parse(merged, f"f{next(self._ids)}")
        if isinstance(fault, Action):
            fault.result = fault.act(self)
            log.info("pycm sim: fault %s done: %s", fault.id, escape_control(fault.describe()))
            return fault
        if fault.duration is not None:
            fault.expires_at = self.clock.monotonic() + fault.duration
        self._active[fault.id] = fault
        self._added.set()
        try:
            fault.start(self)
        except errors.APIError:
            del self._active[fault.id]
            raise
        log.info("pycm sim: fault %s added: %s", fault.id, escape_control(fault.describe()))
        return fault

    def clear(self, fault_id: str | None = None) -> int:
        """End every fault, or the one ``fault_id`` (KeyError if it is not active)."""
        if fault_id is not None:
            if fault_id not in self._active:
                raise KeyError(fault_id)
            self.end(self._active[fault_id], "cleared")
            return 1
        faults = list(self._active.values())
        for fault in faults:
            self.end(fault, "cleared")
        return len(faults)

    def expire(self) -> None:
        """End the faults whose duration is over."""
        now = self.clock.monotonic()
        for fault in list(self._active.values()):
            if fault.expires_at is not None and now >= fault.expires_at:
                self.end(fault, "expired")

    async def run(self) -> None:
        """The expiry ticker (a runnable of the emulator); on stop, every fault is cleared.

        It ticks on the clock only while a duration-bounded fault is active (so an idle
        emulator on a FakeClock has no sleeper of its own).
        """
        try:
            while True:
                if not any(f.expires_at is not None for f in self._active.values()):
                    self._added.clear()
                    await self._added.wait()
                    continue
                await self.clock.sleep(TICK)
                self.expire()
        finally:
            self.clear()

    # ---------------------------------------------------------------- for the kinds (FaultHost)

    def active_faults(self) -> Iterable[LastingFault]:
        """The active faults as they are (no expiry check)."""
        return self._active.values()

    def is_active(self, fault: LastingFault) -> bool:
        return fault.id in self._active

    def end(self, fault: LastingFault, why: str) -> None:
        """``fault`` is no longer active (``why`` is logged); a no-op if it already is not."""
        if self._active.pop(fault.id, None) is None:
            return
        fault.stop(self)
        log.info(
            "pycm sim: fault %s ended (%s): %s", fault.id, why, escape_control(fault.describe())
        )

    def use(self, fault: LastingFault) -> None:
        """``fault`` acted on a request: counted, and ended when its count is used up."""
        fault.hits += 1
        if fault.count is not None:
            fault.count -= 1
            if fault.count <= 0:
                self.end(fault, "count used up")

    # ---------------------------------------------------------------- the request hook

    async def before_request(self, request: Request) -> Response | None:
        path = request_path(request.scope)  # request.url.path, without building the URL
        if path.startswith("/sim/"):
            return await self._endpoint.serve(request, path)
        if not self._active:
            return None
        self.expire()
        if not self._active:
            return None
        info = request_info(request.method, path.rstrip("/") or "/", request.query_params)
        token = bearer_token(request.headers.get("authorization", ""))
        user_info = self.authenticator.authenticate(token) if token else None
        seen = Intercepted(
            verb=info.verb,
            resource=info.resource + (f"/{info.subresource}" if info.subresource else ""),
            namespace=info.namespace,
            user=user_info.name if user_info is not None else "",
            plural=info.resource,
            name=info.name,
            group=info.api_group,
            scope=request.scope,
        )
        for phase in PHASES:
            for fault in [f for f in self._active.values() if f.phase == phase]:
                if fault.matches(seen.verb, seen.resource, seen.namespace, seen.user):
                    answer = await fault.intercept(seen, self)
                    if answer is not None:
                        return answer
            if seen.delay:
                delay, seen.delay = seen.delay, 0.0
                await self.clock.sleep(delay)
        return None
