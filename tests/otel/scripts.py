"""Scripted steps emitted on a real bus, as the manager's components emit them."""

from __future__ import annotations

from pycm.trace.bus import Bus
from pycm.trace.events import Outcome
from pycm.trace.kinds import ApiRequestCompleted, ReconcileResult, ReconcileStarted
from pycm.util.clock import FakeClock

_METHODS = {"get": "GET", "create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE"}


def api_call(
    bus: Bus,
    clock: FakeClock,
    *,
    verb: str = "get",
    code: int = 200,
    ms: float = 2.0,
    method: str = "GET",
    name: str = "web",
    error: str = "",
) -> None:
    clock.advance(ms / 1000)
    bus.point(
        ApiRequestCompleted(
            verb=verb,
            method=method,
            resource="replicasets",
            namespace="default",
            name=name,
            host="127.0.0.1:6443",
            code=code,
            bytes=120,
            error=error,
        ),
        dur_ns=int(ms * 1e6),
    )


def reconcile(
    bus: Bus,
    clock: FakeClock,
    *,
    name: str = "web",
    seconds: float = 0.01,
    calls: int = 2,
    fail: str = "",
    trigger: tuple[str, str] = ("", ""),
    verb: str = "get",
) -> tuple[str, str]:
    """One deployment reconcile with ``calls`` API requests (of ``verb``: "create" makes it one
    that wrote, a cause the sink holds); returns (trace_id, span_id)."""
    begin = ReconcileStarted(
        controller="deployment",
        key=f"default/{name}",
        namespace="default",
        name=name,
        resource="deployments",
        queue_wait_ms=3.5,
        retries=1,
        trigger_kind="ReplicaSet",
        trigger_rv="42",
        trigger_event="update",
        trigger_trace_id=trigger[0],
        trigger_span_id=trigger[1],
    )
    with bus.step(begin) as step:
        for i in range(calls):
            api_call(bus, clock, name=f"{name}-{i}", verb=verb, method=_METHODS[verb])
        clock.advance(max(0.0, seconds - calls * 0.002))
        if fail:
            step.finish(result=ReconcileResult.ERROR, outcome=Outcome.ERROR, error=fail)
        else:
            step.finish(result=ReconcileResult.SUCCESS, action="noop", uid="uid-1", api_calls=calls)
    return step.trace_id, step.span_id
