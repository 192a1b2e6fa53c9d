"""Health checks: /healthz, /livez and /readyz over one mutable registry of named checks
(k8s.io/apiserver ``server/healthz``, KCM's mutable healthz handler).

A check is an async callable returning None when healthy, or an error text (raising counts as
failing too). Checks may be added while serving — the manager adds one per controller as it
starts them — and the next request sees them; there is nothing to rebuild. Every check is on
/healthz; ``livez`` / ``readyz`` choose whether it is also on /livez and /readyz. With no checks
an endpoint has a ``ping`` check that always passes.

Responses, exactly kube's:

- ``GET /healthz`` → 200 ``ok``; ``?verbose`` lists ``[+]name ok`` lines and ends
  ``healthz check passed``; ``?exclude=name`` (repeatable) skips a check (``[+]name excluded:
  ok``; an unknown name adds a ``warn:`` line);
- any failure → 500, every line listed (``[-]name failed: reason withheld``), then
  ``healthz check failed`` — the reason is logged, never sent: these paths are open to anyone;
- ``GET /healthz/<name>`` → that check alone: ``ok``, or 500 ``internal server error: reason
  withheld`` (kube prints the reason here, as the per-check paths need authorization; pycm
  withholds it there too, so no check text ever leaves the process), 404 if unknown.

A check's result is remembered; when it changes (or is first known) HealthCheckChanged is
emitted with the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from pycm.trace.bus import Bus, default_bus
from pycm.trace.kinds import HealthCheckChanged

__all__ = ["ENDPOINTS", "HealthCheck", "HealthCheckFn", "HealthRegistry"]

HealthCheckFn = Callable[[], Awaitable[str | None]]
ENDPOINTS = ("healthz", "livez", "readyz")

_log = logging.getLogger("pycm.server.healthz")
_MAX_REASON = 256  # characters of a reason kept in the trace event


@dataclass(frozen=True, slots=True)
class HealthCheck:
    name: str
    check: HealthCheckFn
    endpoints: frozenset[str]


async def _ping() -> str | None:
    return None


_PING = HealthCheck("ping", _ping, frozenset(ENDPOINTS))


class HealthRegistry:
    """The named checks. Invariants: names are unique; ``_checks`` keeps registration order
    (the order lines are printed in); ``_healthy[name]`` is the last result of that check."""

    def __init__(self, *, bus: Bus | None = None, logger: logging.Logger = _log) -> None:
        self._bus = bus
        self._logger = logger
        self._checks: dict[str, HealthCheck] = {}
        self._healthy: dict[str, bool] = {}

    def add(
        self, name: str, check: HealthCheckFn, *, livez: bool = True, readyz: bool = True
    ) -> None:
        """Register ``check`` as ``name`` (on /healthz, and on /livez and /readyz as asked)."""
        if not name or "/" in name or name != name.strip():
            raise ValueError(f"invalid health check name {name!r}")
        if name in self._checks:
            raise ValueError(f"health check {name!r} is already registered")
        endpoints = {"healthz"}
        if livez:
            endpoints.add("livez")
        if readyz:
            endpoints.add("readyz")
        self._checks[name] = HealthCheck(name, check, frozenset(endpoints))

    def checks(self, endpoint: str) -> list[HealthCheck]:
        """The checks of one endpoint, in registration order (``ping`` when there are none)."""
        found = [c for c in self._checks.values() if endpoint in c.endpoints]
        return found or [_PING]

    async def run(self, check: HealthCheck, endpoint: str) -> str | None:
        """Run one check: None when healthy, else the reason (logged, never sent)."""
        try:
            reason = await check.check()
        except Exception as exc:
            reason = f"check raised {type(exc).__name__}: {exc}"
        if reason is not None and not reason:
            reason = "unhealthy"
        healthy = reason is None
        if reason is not None:
            self._logger.info("%s check %s failed: %s", endpoint, check.name, reason)
        if check is not _PING and self._healthy.get(check.name) is not healthy:
            self._healthy[check.name] = healthy
            (self._bus or default_bus()).point(
                HealthCheckChanged(
                    check=check.name, healthy=healthy, reason=(reason or "")[:_MAX_REASON]
                )
            )
        return reason

    async def _serve_root(self, request: Request, endpoint: str) -> Response:
        excluded = set(request.query_params.getlist("exclude"))
        lines: list[str] = []
        failed: list[str] = []
        for check in self.checks(endpoint):
            if check.name in excluded:
                excluded.discard(check.name)
                lines.append(f"[+]{check.name} excluded: ok\n")
                continue
            if await self.run(check, endpoint) is None:
                lines.append(f"[+]{check.name} ok\n")
            else:
                failed.append(check.name)
                lines.append(f"[-]{check.name} failed: reason withheld\n")
        if excluded:
            quoted = ", ".join(f'"{name}"' for name in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}\n")
        headers = {"X-Content-Type-Options": "nosniff"}
        if failed:
            body = "".join(lines) + f"{endpoint} check failed\n"
            return PlainTextResponse(body, status_code=500, headers=headers)
        if "verbose" not in request.query_params:
            return PlainTextResponse("ok", headers=headers)
        return PlainTextResponse("".join(lines) + f"{endpoint} check passed\n", headers=headers)

    async def _serve_one(self, request: Request, endpoint: str) -> Response:
        name = request.path_params["name"]
        for check in self.checks(endpoint):
            if check.name == name:
                headers = {"X-Content-Type-Options": "nosniff"}
                if await self.run(check, endpoint) is None:
                    return PlainTextResponse("ok", headers=headers)
                return PlainTextResponse(
                    "internal server error: reason withheld\n", status_code=500, headers=headers
                )
        return PlainTextResponse("404 page not found\n", status_code=404)

    def routes(self) -> list[BaseRoute]:
        """``/<endpoint>`` and ``/<endpoint>/<name>`` for healthz, livez and readyz."""
        out: list[BaseRoute] = []
        for endpoint in ENDPOINTS:
            out.append(Route(f"/{endpoint}", self._root_endpoint(endpoint), methods=["GET"]))
            out.append(
                Route(f"/{endpoint}/{{name:path}}", self._one_endpoint(endpoint), methods=["GET"])
            )
        return out

    def _root_endpoint(self, endpoint: str) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            return await self._serve_root(request, endpoint)

        handle.__name__ = f"{endpoint}_root"
        return handle

    def _one_endpoint(self, endpoint: str) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            return await self._serve_one(request, endpoint)

        handle.__name__ = f"{endpoint}_check"
        return handle
