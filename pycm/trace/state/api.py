"""API requests: per instance, requests by verb and status class, errors, latency, rate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypedDict

from pycm.trace.histogram import Histogram
from pycm.trace.kinds import ApiRequestCompleted
from pycm.trace.state.domain import Moment, Stream
from pycm.trace.state.record import BoundedTable, HistogramSnapshot, RateWindow, Record, bump
from pycm.trace.state.registry import handles
from pycm.trace.state.startup import MAX_INSTANCES

if TYPE_CHECKING:
    from pycm.trace.state.startup import InstanceRecord

__all__ = [
    "SECTION",
    "ApiRecord",
    "ApiSnapshot",
    "StateView",
    "attach",
    "dump",
    "load",
    "new_table",
]

_MS = 1e-6
_CODE_CLASS = {1: "1xx", 2: "2xx", 3: "3xx", 4: "4xx", 5: "5xx"}


class ApiSnapshot(TypedDict):
    """One instance's API requests."""

    instance: Annotated[str, "the instance"]
    requests: Annotated[int, "requests completed"]
    verbs: Annotated[dict[str, int], "requests by verb"]
    codes: Annotated[dict[str, int], 'requests by status class: "2xx", "4xx", "5xx", "none", ...']
    errors: Annotated[int, "5xx answers and no answer (code 0), fenced writes aside"]
    fenced: Annotated[int, "writes the lease fence refused unsent (renew stale, or lease lost)"]
    retries: Annotated[int, "retries the client made"]
    bytes: Annotated[int, "response bytes"]
    rate_limiter_wait_ms: Annotated[float, "time spent waiting for the client rate limiter"]
    latency: Annotated[HistogramSnapshot, "request duration (ms)"]
    rate: Annotated[list[list[int]], "[second, requests] of the last 60 s (the rate's state)"]
    touched: Annotated[int, "recency for eviction"]
    requests_per_s: Annotated[float, "over the last 10 s of event time (derived)"]


@dataclass(slots=True)
class ApiRecord(Record):
    """One instance's API requests. ``errors`` counts 5xx answers and no answer (code 0);
    ``fenced`` the writes refused before they were sent (not errors of the API server's)."""

    instance: str = ""
    requests: int = 0
    verbs: dict[str, int] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)  # "2xx", "4xx", "5xx", "none", ...
    errors: int = 0
    fenced: int = 0
    retries: int = 0
    bytes: int = 0
    rate_limiter_wait_ms: float = 0.0
    latency: Histogram = field(default_factory=Histogram)
    rate: RateWindow = field(default_factory=RateWindow)
    touched: int = 0

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "latency": Histogram.from_dict,
        "rate": RateWindow.load,
    }


SECTION = "api"


class StateView(Stream, Protocol):
    """The state as this domain sees it."""

    api: BoundedTable[str, ApiRecord]


def new_table() -> BoundedTable[str, ApiRecord]:
    return BoundedTable(MAX_INSTANCES, lambda instance: ApiRecord(instance=instance))


def attach(state: StateView) -> None:
    state.api = new_table()


def dump(state: StateView, at: Moment) -> dict[str, ApiSnapshot]:
    now, window_s = at.now, at.window_s
    out: dict[str, ApiSnapshot] = {}
    for name, a in state.api.items():
        d = a.dump()
        d["requests_per_s"] = a.rate.rate(now, window_s)
        out[name] = d  # type: ignore[assignment]
    return out


def load(state: StateView, data: Any) -> None:
    state.api.fill((k, ApiRecord.load(v)) for k, v in (data or {}).items())


@handles(ApiRequestCompleted)
def _request(state: StateView, ev: ApiRequestCompleted, inst: InstanceRecord) -> None:
    rec = state.api[ev.instance]
    rec.touched = state.applied
    rec.requests += 1
    bump(rec.verbs, ev.verb)
    code = ev.code
    bump(rec.codes, _CODE_CLASS.get(code // 100, "other") if code else "none")
    rec.latency.add(ev.dur_ns * _MS)
    rec.rate.add(ev.ts)
    rec.rate_limiter_wait_ms += ev.rate_limiter_wait_ms
    rec.retries += ev.retries
    rec.bytes += ev.bytes
    if ev.fenced:
        rec.fenced += 1
        state.error(ev, f"{ev.verb} {ev.resource} fenced: {ev.error}")
    elif code >= 500 or code == 0:
        rec.errors += 1
        state.error(ev, f"{ev.verb} {ev.resource} {code or 'no response'}: {ev.error}")
