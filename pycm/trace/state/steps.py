"""Steps in flight: begins whose end was not seen, and ends seen before their begin.

Every step kind goes through :func:`open_step` / :func:`close_step` (the domain handlers of
step kinds call them first); a step kind without a domain handler gets :func:`generic_begin` /
:func:`generic_end` (the state resolves those for kinds added after it). A viewer attached
mid-step sees an end without its begin: it is applied from the end alone and its span id is
remembered in ``ended_early``, so a begin arriving after it (an out-of-order merge) is not
counted in flight. Both collections are bounded, oldest first.
"""

from __future__ import annotations

from typing import Annotated, Any, Protocol, TypedDict

from pycm.trace import codec
from pycm.trace.events import Outcome, StepBegin, StepEnd
from pycm.trace.state.domain import Moment, Stream
from pycm.trace.state.registry import handles_rest

__all__ = [
    "MAX_ENDED_EARLY",
    "MAX_IN_FLIGHT",
    "SECTION",
    "InFlightSnapshot",
    "StateView",
    "attach",
    "close_step",
    "dump",
    "generic_begin",
    "generic_end",
    "load",
    "open_step",
]

MAX_IN_FLIGHT = 4096  # open steps; beyond, the oldest begin is evicted
MAX_ENDED_EARLY = 1024  # ends seen before their begin (out-of-order merges)
_ERROR = Outcome.ERROR


SECTION = "in_flight"


class StateView(Stream, Protocol):
    """The state as the steps in flight see it (and every domain that opens steps)."""

    open: dict[str, StepBegin]  # span id -> its begin, oldest first
    ended_early: dict[str, None]  # span ids, oldest first
    in_flight_evicted: int


class InFlightSnapshot(TypedDict):
    """Steps begun and not ended."""

    total: Annotated[int, "open steps"]
    by_step: Annotated[dict[str, int], "open steps by step name (reconcile, informer.list, ...)"]
    open: Annotated[
        list[dict[str, Any]], "the begin events (the codec's JSON objects), oldest first"
    ]
    ended_early: Annotated[list[str], "span ids of ends seen before their begin, oldest first"]


def open_step(state: StateView, begin: StepBegin) -> None:
    sid = begin.span_id
    if not sid:
        return  # not pairable: a hand-made begin without a span
    if sid in state.ended_early:
        del state.ended_early[sid]  # its end came first (out-of-order merge)
        return
    open_ = state.open
    if sid in open_:
        return  # a duplicate (a replay overlapping a live stream)
    if len(open_) >= MAX_IN_FLIGHT:
        del open_[next(iter(open_))]
        state.in_flight_evicted += 1
    open_[sid] = begin


def close_step(state: StateView, end: StepEnd) -> StepBegin | None:
    """Pair ``end`` with its begin (returned, if it was seen); an error end goes to the ring."""
    sid = end.span_id
    if not sid:
        return None
    begin = state.open.pop(sid, None)
    if begin is None:
        early = state.ended_early
        if len(early) >= MAX_ENDED_EARLY:
            del early[next(iter(early))]
        early[sid] = None
    if end.outcome == _ERROR:
        state.error(end, end.error)
    return begin


@handles_rest(StepBegin)
def generic_begin(state: StateView, ev: StepBegin, inst: object) -> None:
    open_step(state, ev)


@handles_rest(StepEnd)
def generic_end(state: StateView, ev: StepEnd, inst: object) -> None:
    close_step(state, ev)


def attach(state: StateView) -> None:
    state.open = {}
    state.ended_early = {}


def dump(state: StateView, at: Moment) -> InFlightSnapshot:
    by_step: dict[str, int] = {}
    for begin in state.open.values():
        by_step[begin.STEP] = by_step.get(begin.STEP, 0) + 1
    return {
        "total": len(state.open),
        "by_step": by_step,
        "open": [codec.to_dict(b) for b in state.open.values()],
        "ended_early": list(state.ended_early),
    }


def load(state: StateView, data: Any) -> None:
    data = data or {}
    for d in data.get("open", ()):
        try:
            begin = codec.from_dict(d)
        except codec.CodecError:
            continue
        if isinstance(begin, StepBegin) and begin.span_id:
            state.open[begin.span_id] = begin
    state.ended_early = dict.fromkeys(data.get("ended_early", ()))
