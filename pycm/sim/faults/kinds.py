"""The fault kinds, one class each, and :data:`KINDS`, the one place a new kind is added.

A kind names itself (its wire ``kind``), declares the JSON fields of its own, reads them
(``configure``), describes itself and, by its ``phase``, acts on the requests it matches: a
:class:`~pycm.sim.faults.fault.LastingFault`; a one-shot kind is an
:class:`~pycm.sim.faults.fault.Action`. :func:`parse` reads any kind from
its JSON spec, the shared fields first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from starlette.responses import Response

from pycm.sim import errors
from pycm.sim.faults.fault import TICK, Action, FaultHost, Intercepted, LastingFault, invalid
from pycm.sim.handlers import error_response
from pycm.sim.watchlag import WATCH_LAG_SCOPE_KEY

__all__ = [
    "KINDS",
    "PHASES",
    "CompactFault",
    "DropWatchesFault",
    "ErrorFault",
    "LatencyFault",
    "PartitionFault",
    "PauseKubeletFault",
    "ResumeKubeletFault",
    "WatchLagFault",
    "parse",
]

_HOLD_DEFAULT = 30.0  # a partitioned request's longest hang when no hold or duration says less
_ERROR_REASONS = {500: "InternalError", 429: "TooManyRequests", 409: "Conflict"}
# The fields every kind shares (its scope and bounds).
_SHARED_FIELDS = frozenset({"kind", "verb", "resource", "namespace", "user", "count", "duration"})


def _number(spec: Mapping[str, Any], key: str, *, positive: bool = False) -> float | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(f"{key} must be a number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise invalid(f"{key} must be {'positive' if positive else 'at least 0'}, got {value}")
    return float(value)


def _text(spec: Mapping[str, Any], key: str) -> str | None:
    value = spec.get(key)
    if value is None or value == "*":
        return None
    if not isinstance(value, str) or not value:
        raise invalid(f"{key} must be a non-empty string, got {value!r}")
    return value


# ---------------------------------------------------------------- lasting kinds


@dataclass
class PartitionFault(LastingFault):
    """Every request of ``user`` hangs until the fault ends (then it is served) or ``hold``
    seconds pass (then 504 Timeout). Its count is the number of requests it holds."""

    kind = "partition"
    own_fields = frozenset({"hold"})
    phase = 0

    hold: float | None = None

    def configure(self, spec: Mapping[str, Any]) -> None:
        if self.user is None:
            raise invalid("a partition fault needs a user")
        self.hold = _number(spec, "hold", positive=True)

    def matches(self, verb: str, resource: str, namespace: str, user: str) -> bool:
        return user == self.user

    def what(self) -> str:
        hold = f"{self.hold}s" if self.hold is not None else "until it ends"
        return f"partition of user {self.user} (hold {hold}, then 504)"

    def own_json(self) -> dict[str, Any]:
        return {} if self.hold is None else {"hold": self.hold}

    async def intercept(self, request: Intercepted, host: FaultHost) -> Response | None:
        """Hang the request: served if the fault ends first, else 504. The last request of
        its count ends the fault when its hold is over (so it too gets the 504)."""
        if self.count == 0:
            return None  # its count is used up; the last held request is still hanging
        self.hits += 1
        if self.count is not None:
            self.count -= 1
        clock = host.clock
        start = clock.monotonic()
        limit = self.hold
        if limit is None:
            limit = _HOLD_DEFAULT
            if self.expires_at is not None:
                limit = min(limit, self.expires_at - start + TICK)
        while host.is_active(self):
            waited = clock.monotonic() - start
            if waited >= limit:
                if self.count == 0:
                    host.end(self, "count used up")
                message = (
                    f"the request timed out: user {self.user} is partitioned (fault {self.id})"
                )
                return error_response(errors.APIError(504, "Timeout", message))
            await clock.sleep(min(TICK, limit - waited))
            host.expire()
        return None


@dataclass
class _SecondsFault(LastingFault):
    """A kind whose own field is a number of ``seconds`` it delays something by."""

    own_fields = frozenset({"seconds"})
    label: ClassVar[str]  # its description's first word(s)

    seconds: float = 0.0

    def configure(self, spec: Mapping[str, Any]) -> None:
        seconds = _number(spec, "seconds", positive=True)
        if seconds is None:
            raise invalid(f"a {self.kind} fault needs seconds")
        self.seconds = seconds

    def what(self) -> str:
        return f"{self.label} {self.seconds}s on {self.scope_text()}"

    def own_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds}


@dataclass
class LatencyFault(_SecondsFault):
    """``seconds`` added before matching requests are served (the latencies of every matching
    fault add up, slept once)."""

    kind = "latency"
    label = "latency"
    phase = 1

    async def intercept(self, request: Intercepted, host: FaultHost) -> Response | None:
        request.delay += self.seconds
        host.use(self)
        return None


@dataclass
class WatchLagFault(_SecondsFault):
    """Every watch opened while it is active delivers its live events ``seconds`` late, for its
    whole life (:mod:`pycm.sim.watchlag`)."""

    kind = "watch-lag"
    label = "watch lag"
    phase = 2

    def configure(self, spec: Mapping[str, Any]) -> None:
        super().configure(spec)
        self.verb = "watch"

    async def intercept(self, request: Intercepted, host: FaultHost) -> Response | None:
        # Read by the watch handler (pycm.sim.watchlag), which lags this watch.
        lagged = request.scope.get(WATCH_LAG_SCOPE_KEY, 0.0)
        request.scope[WATCH_LAG_SCOPE_KEY] = lagged + self.seconds
        host.use(self)
        return None


@dataclass
class ErrorFault(LastingFault):
    """Matching requests fail, with probability ``rate``, as a v1 Status: 500 InternalError,
    429 TooManyRequests (``Retry-After: retryAfter``) or 409 Conflict."""

    kind = "error"
    own_fields = frozenset({"status", "rate", "retryAfter"})
    phase = 3

    status: int = 500
    rate: float = 1.0
    retry_after: int = 1

    def configure(self, spec: Mapping[str, Any]) -> None:
        status = spec.get("status", 500)
        if status not in _ERROR_REASONS:
            raise invalid(f"status must be 500, 429 or 409, got {status!r}")
        self.status = int(status)
        rate = _number(spec, "rate")
        if rate is not None:
            if rate > 1:
                raise invalid(f"rate must be between 0 and 1, got {rate}")
            self.rate = rate
        retry_after = _number(spec, "retryAfter")
        if retry_after is not None:
            self.retry_after = int(retry_after)

    def what(self) -> str:
        reason = _ERROR_REASONS[self.status]
        return f"error {self.status} {reason} at rate {self.rate} on {self.scope_text()}"

    def own_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": self.status, "rate": self.rate}
        if self.status == 429:
            body["retryAfter"] = self.retry_after
        return body

    async def intercept(self, request: Intercepted, host: FaultHost) -> Response | None:
        if not host.is_active(self):
            return None  # ended while an earlier phase slept
        if self.rate < 1 and host.rng.random() >= self.rate:
            return None
        host.use(self)
        return error_response(self._error(request))

    def _error(self, request: Intercepted) -> errors.APIError:
        why = f"injected by fault {self.id}"
        if self.status == 429:
            return errors.too_many_requests(
                f"the server has received too many requests and has asked us to try again "
                f"later ({why})",
                self.retry_after,
            )
        if self.status == 409:
            return errors.conflict(
                request.plural or "objects",
                request.name,
                request.group,
                f"the object has been modified; please apply your changes to the latest "
                f"version and try again ({why})",
            )
        return errors.internal(why)


@dataclass
class PauseKubeletFault(LastingFault):
    """The simulated kubelet stops; it resumes when the last such fault ends."""

    kind = "pause-kubelet"

    def what(self) -> str:
        return "kubelet paused"

    def start(self, host: FaultHost) -> None:
        kubelet = host.kubelet()
        if kubelet is None:
            raise invalid("the emulator runs no kubelet (--kubelet=off)")
        kubelet.pause()

    def stop(self, host: FaultHost) -> None:
        if any(isinstance(f, PauseKubeletFault) for f in host.active_faults()):
            return
        kubelet = host.kubelet()
        if kubelet is not None:
            kubelet.resume()


# ---------------------------------------------------------------- one-shot actions


@dataclass
class DropWatchesFault(Action):
    """Every open watch ends now."""

    kind = "drop-watches"

    def act(self, host: FaultHost) -> dict[str, Any]:
        return {"dropped": host.store.drop_watches("fault injection: watches dropped")}

    def done(self, result: dict[str, Any]) -> str:
        return f"dropped {result.get('dropped', 0)} open watches"


@dataclass
class CompactFault(Action):
    """The watch history is forgotten: a watch from an older resourceVersion gets 410."""

    kind = "compact"

    def act(self, host: FaultHost) -> dict[str, Any]:
        return {"compactedResourceVersion": str(host.store.compact())}

    def done(self, result: dict[str, Any]) -> str:
        rv = result.get("compactedResourceVersion", "?")
        return f"compacted the watch history at resourceVersion {rv}"


@dataclass
class ResumeKubeletFault(Action):
    """The kubelet resumes now: every pause-kubelet fault ends."""

    kind = "resume-kubelet"

    def act(self, host: FaultHost) -> dict[str, Any]:
        kubelet = host.kubelet()
        if kubelet is None:
            raise invalid("the emulator runs no kubelet (--kubelet=off)")
        for paused in [f for f in host.active_faults() if isinstance(f, PauseKubeletFault)]:
            host.end(paused, "kubelet resumed")
        kubelet.resume()
        return {"resumed": True}

    def done(self, result: dict[str, Any]) -> str:
        return "kubelet resumed"


# ---------------------------------------------------------------- the registry

# Every kind, lasting ones first (the order the refusal of an unknown kind lists them in).
KINDS: tuple[type[LastingFault] | type[Action], ...] = (
    LatencyFault,
    ErrorFault,
    PartitionFault,
    PauseKubeletFault,
    WatchLagFault,
    DropWatchesFault,
    CompactFault,
    ResumeKubeletFault,
)
_BY_NAME = {kind.kind: kind for kind in KINDS}
_FIELDS = _SHARED_FIELDS.union(*(kind.own_fields for kind in KINDS))
# The phases in which active faults act on a request, in order.
PHASES = tuple(
    sorted(
        {kind.phase for kind in KINDS if issubclass(kind, LastingFault) and kind.phase is not None}
    )
)


def parse(spec: Mapping[str, Any], fault_id: str) -> LastingFault | Action:
    """The fault ``spec`` (its JSON form) describes; :func:`invalid` for an invalid or (a
    lasting one) unbounded one."""
    unknown = sorted(set(spec) - _FIELDS)
    if unknown:
        raise invalid(f"unknown field(s) {', '.join(unknown)}")
    name = spec.get("kind")
    kind = _BY_NAME.get(name) if isinstance(name, str) else None
    if kind is None:
        raise invalid(f"kind must be one of {', '.join(_BY_NAME)}, got {name!r}")
    count = spec.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        raise invalid(f"count must be an integer, got {count!r}")
    if count is not None and count < 1:
        raise invalid(f"count must be at least 1, got {count}")
    duration = _number(spec, "duration", positive=True)
    fault = kind(
        id=fault_id,
        verb=_text(spec, "verb"),
        resource=_text(spec, "resource"),
        namespace=_text(spec, "namespace"),
        user=_text(spec, "user"),
        count=count,
        duration=duration,
    )
    if isinstance(fault, Action):
        return fault
    if count is None and duration is None:
        raise invalid(f"a {kind.kind} fault needs a bound: count and/or duration")
    fault.configure(spec)
    return fault
