"""Fault injection: bounded, clearable misbehaviour of the emulator, for chaos and tests.

Faults are added through the Python API (``emu.faults.add(kind="latency", ...)``,
``emu.faults.clear()``) or the admin endpoint ``/sim/v1/faults`` (the emulator's admin token
only: 401 without a valid token, 403 for any other, even one of a ``system:masters`` user;
``GET`` lists the active faults, ``POST`` adds one from a JSON body, ``DELETE`` clears all,
``DELETE /sim/v1/faults/<id>`` one). Kinds:

- ``latency``: ``seconds`` added before matching requests are served.
- ``error``: matching requests fail, with probability ``rate`` (default 1), with ``status`` 500
  (InternalError), 429 (TooManyRequests, ``Retry-After: retryAfter``) or 409 (Conflict) — as
  proper v1 Status bodies.
- ``partition``: every request of ``user`` hangs until the fault ends (then it is served) or
  ``hold`` seconds pass (then 504 Timeout).
- ``pause-kubelet``: the simulated kubelet stops (resumes when the fault ends or is cleared).
- ``watch-lag``: every watch opened while it is active (matching ``resource``, ``namespace``,
  ``user``) delivers its live events ``seconds`` late, for its whole life
  (:mod:`pycm.sim.watchlag`): a stale informer cache, on demand.
- one-shot actions, done when added and never active: ``drop-watches`` (every open watch ends
  now), ``compact`` (the watch history is forgotten: a watch from an older resourceVersion gets
  410 Expired), ``resume-kubelet``.

Matching (latency, error): optional ``verb`` (kube's: get, list, watch, create, update, patch,
delete, deletecollection), ``resource`` (plural, or ``plural/subresource``), ``namespace`` and
``user``; an absent field matches anything. Every lasting fault needs a bound — ``count``
(requests affected) and/or ``duration`` (seconds from now) — or it is refused (422); the
first bound reached ends it. Each addition, end and action is logged on ``pycm.sim``, one line
each: ``pycm sim: fault f3 added: latency 2.0s on update leases for user x (count 5)``.

The request hook runs before authentication (see ``pycm.sim.handlers``) and costs nothing but
a path check while no fault is active.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from pycm.sim import errors
from pycm.sim.auth import TokenAuthenticator
from pycm.sim.kubelet import Kubelet
from pycm.sim.requestinfo import request_info, request_path
from pycm.sim.store import Store
from pycm.sim.watchlag import WATCH_LAG_SCOPE_KEY
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.escape import escape_control

__all__ = ["FAULTS_PATH", "Fault", "Faults"]

log = logging.getLogger("pycm.sim")

FAULTS_PATH = "/sim/v1/faults"

LATENCY = "latency"
ERROR = "error"
PARTITION = "partition"
PAUSE_KUBELET = "pause-kubelet"
DROP_WATCHES = "drop-watches"
COMPACT = "compact"
RESUME_KUBELET = "resume-kubelet"
WATCH_LAG = "watch-lag"
_LASTING = (LATENCY, ERROR, PARTITION, PAUSE_KUBELET, WATCH_LAG)
_ACTIONS = (DROP_WATCHES, COMPACT, RESUME_KUBELET)
_ERROR_REASONS = {500: "InternalError", 429: "TooManyRequests", 409: "Conflict"}
_FIELDS = {
    "kind",
    "verb",
    "resource",
    "namespace",
    "user",
    "seconds",
    "status",
    "rate",
    "retryAfter",
    "hold",
    "count",
    "duration",
}
# How often the expiry ticker looks at duration-bounded faults (a paused kubelet resumes, a
# held request is released, within this).
_TICK = 0.05
_HOLD_DEFAULT = 30.0  # a partitioned request's longest hang when no hold or duration says less


@dataclass
class Fault:
    """One active (or, for actions, done) fault. ``count`` is what is left of its count bound."""

    id: str
    kind: str
    verb: str | None = None
    resource: str | None = None
    namespace: str | None = None
    user: str | None = None
    seconds: float = 0.0
    status: int = 500
    rate: float = 1.0
    retry_after: int = 1
    hold: float | None = None
    count: int | None = None
    duration: float | None = None
    expires_at: float | None = None  # on the Faults' clock (monotonic)
    hits: int = 0
    result: dict[str, Any] | None = None  # what an action did

    def matches(self, verb: str, resource: str, namespace: str, user: str) -> bool:
        if self.kind == PARTITION:
            return user == self.user
        return (
            (self.verb is None or self.verb == verb)
            and (self.resource is None or self.resource in (resource, resource.split("/")[0]))
            and (self.namespace is None or self.namespace == namespace)
            and (self.user is None or self.user == user)
        )

    def describe(self) -> str:
        scope = f"{self.verb or 'every verb'} {self.resource or 'every resource'}"
        if self.namespace:
            scope += f" in namespace {self.namespace}"
        if self.user:
            scope += f" for user {self.user}"
        if self.kind == LATENCY:
            what = f"latency {self.seconds}s on {scope}"
        elif self.kind == ERROR:
            what = f"error {self.status} {_ERROR_REASONS[self.status]} at rate {self.rate} on "
            what += scope
        elif self.kind == PARTITION:
            what = f"partition of user {self.user} (hold {self._hold_text()}, then 504)"
        elif self.kind == PAUSE_KUBELET:
            what = "kubelet paused"
        elif self.kind == WATCH_LAG:
            what = f"watch lag {self.seconds}s on {scope}"
        else:
            result = self.result or {}
            if self.kind == DROP_WATCHES:
                return f"dropped {result.get('dropped', 0)} open watches"
            if self.kind == COMPACT:
                rv = result.get("compactedResourceVersion", "?")
                return f"compacted the watch history at resourceVersion {rv}"
            return "kubelet resumed"
        bounds = []
        if self.count is not None:
            bounds.append(f"count {self.count}")
        if self.duration is not None:
            bounds.append(f"for {self.duration}s")
        return f"{what} ({', '.join(bounds)})"

    def _hold_text(self) -> str:
        return f"{self.hold}s" if self.hold is not None else "until it ends"

    def to_json(self, now: float) -> dict[str, Any]:
        body: dict[str, Any] = {"id": self.id, "kind": self.kind, "description": self.describe()}
        for key, value in (
            ("verb", self.verb),
            ("resource", self.resource),
            ("namespace", self.namespace),
            ("user", self.user),
            ("count", self.count),
            ("duration", self.duration),
            ("result", self.result),
        ):
            if value is not None:
                body[key] = value
        if self.kind in (LATENCY, WATCH_LAG):
            body["seconds"] = self.seconds
        if self.kind == ERROR:
            body.update(status=self.status, rate=self.rate)
            if self.status == 429:
                body["retryAfter"] = self.retry_after
        if self.kind == PARTITION and self.hold is not None:
            body["hold"] = self.hold
        if self.expires_at is not None:
            body["remainingSeconds"] = round(max(0.0, self.expires_at - now), 3)
        body["hits"] = self.hits
        return body


def _invalid(message: str) -> errors.APIError:
    return errors.APIError(422, "Invalid", f"invalid fault: {message}")


def _number(spec: Mapping[str, Any], key: str, *, positive: bool = False) -> float | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(f"{key} must be a number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise _invalid(f"{key} must be {'positive' if positive else 'at least 0'}, got {value}")
    return float(value)


def _text(spec: Mapping[str, Any], key: str) -> str | None:
    value = spec.get(key)
    if value is None or value == "*":
        return None
    if not isinstance(value, str) or not value:
        raise _invalid(f"{key} must be a non-empty string, got {value!r}")
    return value


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
        self._kubelet = kubelet
        self._rng = random.Random(seed)
        self._ids = itertools.count(1)
        # Invariant: every fault in `_active` is lasting and not yet past a bound.
        self._active: dict[str, Fault] = {}
        self._added = asyncio.Event()  # set on every addition (wakes the idle ticker)

    # ---------------------------------------------------------------- the Python API

    @property
    def active(self) -> list[Fault]:
        self.expire()
        return list(self._active.values())

    def add(self, spec: Mapping[str, Any] | None = None, /, **fields: Any) -> Fault:
        """Add a fault from ``spec`` and/or keyword fields (the JSON field names; ``retryAfter``
        may be given as ``retry_after``). Raises APIError 422 for an invalid or unbounded one."""
        merged = dict(spec or {})
        if "retry_after" in fields:
            fields["retryAfter"] = fields.pop("retry_after")
        merged.update(fields)
        fault = self._parse(merged)
        if fault.kind in _ACTIONS:
            fault.result = self._act(fault)
            log.info("pycm sim: fault %s done: %s", fault.id, escape_control(fault.describe()))
            return fault
        if fault.duration is not None:
            fault.expires_at = self.clock.monotonic() + fault.duration
        self._active[fault.id] = fault
        self._added.set()
        if fault.kind == PAUSE_KUBELET:
            kubelet = self._kubelet()
            if kubelet is None:
                del self._active[fault.id]
                raise _invalid("the emulator runs no kubelet (--kubelet=off)")
            kubelet.pause()
        log.info("pycm sim: fault %s added: %s", fault.id, escape_control(fault.describe()))
        return fault

    def clear(self, fault_id: str | None = None) -> int:
        """End every fault, or the one ``fault_id`` (KeyError if it is not active)."""
        if fault_id is not None:
            if fault_id not in self._active:
                raise KeyError(fault_id)
            self._end(self._active[fault_id], "cleared")
            return 1
        faults = list(self._active.values())
        for fault in faults:
            self._end(fault, "cleared")
        return len(faults)

    def expire(self) -> None:
        """End the faults whose duration is over."""
        now = self.clock.monotonic()
        for fault in list(self._active.values()):
            if fault.expires_at is not None and now >= fault.expires_at:
                self._end(fault, "expired")

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
                await self.clock.sleep(_TICK)
                self.expire()
        finally:
            self.clear()

    def _end(self, fault: Fault, why: str) -> None:
        if self._active.pop(fault.id, None) is None:
            return
        if fault.kind == PAUSE_KUBELET and not any(
            f.kind == PAUSE_KUBELET for f in self._active.values()
        ):
            kubelet = self._kubelet()
            if kubelet is not None:
                kubelet.resume()
        log.info(
            "pycm sim: fault %s ended (%s): %s", fault.id, why, escape_control(fault.describe())
        )

    def _use(self, fault: Fault) -> None:
        fault.hits += 1
        if fault.count is not None:
            fault.count -= 1
            if fault.count <= 0:
                self._end(fault, "count used up")

    def _parse(self, spec: Mapping[str, Any]) -> Fault:
        unknown = sorted(set(spec) - _FIELDS)
        if unknown:
            raise _invalid(f"unknown field(s) {', '.join(unknown)}")
        kind = spec.get("kind")
        if kind not in _LASTING + _ACTIONS:
            raise _invalid(f"kind must be one of {', '.join(_LASTING + _ACTIONS)}, got {kind!r}")
        count = spec.get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise _invalid(f"count must be an integer, got {count!r}")
        if count is not None and count < 1:
            raise _invalid(f"count must be at least 1, got {count}")
        duration = _number(spec, "duration", positive=True)
        fault = Fault(
            id=f"f{next(self._ids)}",
            kind=str(kind),
            verb=_text(spec, "verb"),
            resource=_text(spec, "resource"),
            namespace=_text(spec, "namespace"),
            user=_text(spec, "user"),
            count=count,
            duration=duration,
        )
        if kind in _ACTIONS:
            return fault
        if count is None and duration is None:
            raise _invalid(f"a {kind} fault needs a bound: count and/or duration")
        if kind in (LATENCY, WATCH_LAG):
            seconds = _number(spec, "seconds", positive=True)
            if seconds is None:
                raise _invalid(f"a {kind} fault needs seconds")
            fault.seconds = seconds
            if kind == WATCH_LAG:
                fault.verb = "watch"
        elif kind == ERROR:
            status = spec.get("status", 500)
            if status not in _ERROR_REASONS:
                raise _invalid(f"status must be 500, 429 or 409, got {status!r}")
            fault.status = int(status)
            rate = _number(spec, "rate")
            if rate is not None:
                if rate > 1:
                    raise _invalid(f"rate must be between 0 and 1, got {rate}")
                fault.rate = rate
            retry_after = _number(spec, "retryAfter")
            if retry_after is not None:
                fault.retry_after = int(retry_after)
        elif kind == PARTITION:
            if fault.user is None:
                raise _invalid("a partition fault needs a user")
            fault.hold = _number(spec, "hold", positive=True)
        return fault

    def _act(self, fault: Fault) -> dict[str, Any]:
        if fault.kind == DROP_WATCHES:
            return {"dropped": self.store.drop_watches("fault injection: watches dropped")}
        if fault.kind == COMPACT:
            return {"compactedResourceVersion": str(self.store.compact())}
        kubelet = self._kubelet()
        if kubelet is None:
            raise _invalid("the emulator runs no kubelet (--kubelet=off)")
        for paused in [f for f in self._active.values() if f.kind == PAUSE_KUBELET]:
            self._end(paused, "kubelet resumed")
        kubelet.resume()
        return {"resumed": True}

    # ---------------------------------------------------------------- the request hook

    async def before_request(self, request: Request) -> Response | None:
        path = request_path(request.scope)  # request.url.path, without building the URL
        if path.startswith("/sim/"):
            return await self._endpoint(request, path)
        if not self._active:
            return None
        self.expire()
        if not self._active:
            return None
        info = request_info(request.method, path.rstrip("/") or "/", request.query_params)
        token = _bearer(request)
        user_info = self.authenticator.authenticate(token) if token else None
        user = user_info.name if user_info is not None else ""
        resource = info.resource + (f"/{info.subresource}" if info.subresource else "")
        for fault in [f for f in self._active.values() if f.kind == PARTITION]:
            if fault.matches(info.verb, resource, info.namespace, user):
                answer = await self._hold(fault)
                if answer is not None:
                    return answer
        delay = 0.0
        for fault in [f for f in self._active.values() if f.kind == LATENCY]:
            if fault.matches(info.verb, resource, info.namespace, user):
                delay += fault.seconds
                self._use(fault)
        if delay:
            await self.clock.sleep(delay)
        if info.verb == "watch":
            for fault in [f for f in self._active.values() if f.kind == WATCH_LAG]:
                if fault.matches(info.verb, resource, info.namespace, user):
                    # Read by the watch handler (pycm.sim.watchlag), which lags this watch.
                    lagged = request.scope.get(WATCH_LAG_SCOPE_KEY, 0.0)
                    request.scope[WATCH_LAG_SCOPE_KEY] = lagged + fault.seconds
                    self._use(fault)
        for fault in [f for f in self._active.values() if f.kind == ERROR]:
            if fault.id in self._active and fault.matches(
                info.verb, resource, info.namespace, user
            ):
                if fault.rate < 1 and self._rng.random() >= fault.rate:
                    continue
                self._use(fault)
                return _error_response(fault, info.resource, info.name, info.api_group)
        return None

    async def _hold(self, fault: Fault) -> Response | None:
        """Hang a partitioned user's request: served if the fault ends first, else 504.

        A partition's count is the number of requests it holds; the last one ends the fault
        when its hold is over (so it too gets the 504).
        """
        if fault.count == 0:
            return None  # its count is used up; the last held request is still hanging
        fault.hits += 1
        if fault.count is not None:
            fault.count -= 1
        start = self.clock.monotonic()
        limit = fault.hold
        if limit is None:
            limit = _HOLD_DEFAULT
            if fault.expires_at is not None:
                limit = min(limit, fault.expires_at - start + _TICK)
        while fault.id in self._active:
            waited = self.clock.monotonic() - start
            if waited >= limit:
                if fault.count == 0:
                    self._end(fault, "count used up")
                message = (
                    f"the request timed out: user {fault.user} is partitioned (fault {fault.id})"
                )
                status = errors.status_object(504, "Timeout", message)
                return Response(orjson.dumps(status), 504, media_type="application/json")
            await self.clock.sleep(min(_TICK, limit - waited))
            self.expire()
        return None

    # ---------------------------------------------------------------- the admin endpoint

    async def _endpoint(self, request: Request, path: str) -> Response:
        try:
            return await self._admin(request, path.rstrip("/"))
        except errors.APIError as err:
            return _status_response(err)

    async def _admin(self, request: Request, path: str) -> Response:
        token = _bearer(request)
        user = self.authenticator.authenticate(token) if token else None
        if user is None or token is None:
            raise errors.unauthorized()
        # The admin token only, as docs/sim.md has always said: faults are the operator's
        # controls over the emulator itself (they fail and partition everyone's requests), not
        # part of the Kubernetes API a cluster-admin holds. Tests and the demo give the
        # managers under test system:masters tokens; those must not reach the fault API.
        if not self.authenticator.is_admin_token(token):
            raise errors.forbidden_path(user.name, request.method.lower(), path)
        now = self.clock.monotonic()
        if path == FAULTS_PATH:
            if request.method == "GET":
                items = [f.to_json(now) for f in self.active]
                return _json({"kind": "FaultList", "apiVersion": "sim/v1", "items": items})
            if request.method == "POST":
                try:
                    body = orjson.loads(await request.body())
                except orjson.JSONDecodeError as err:
                    raise errors.bad_request(f"the body is not JSON: {err}") from None
                if not isinstance(body, dict):
                    raise errors.bad_request("the body must be a JSON object")
                return _json(self.add(body).to_json(now), 201)
            if request.method == "DELETE":
                return _json({"kind": "Status", "apiVersion": "v1", "cleared": self.clear()})
            raise errors.method_not_allowed(request.method, path)
        prefix = FAULTS_PATH + "/"
        if path.startswith(prefix) and "/" not in path[len(prefix) :]:
            fault_id = path[len(prefix) :]
            self.expire()
            fault = self._active.get(fault_id)
            if fault is None:
                raise errors.APIError(404, "NotFound", f'fault "{fault_id}" not found')
            if request.method == "GET":
                return _json(fault.to_json(now))
            if request.method == "DELETE":
                self.clear(fault_id)
                return _json({"kind": "Status", "apiVersion": "v1", "cleared": 1})
            raise errors.method_not_allowed(request.method, path)
        raise errors.not_found("", "")


def _bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status, media_type="application/json")


def _status_response(err: errors.APIError) -> Response:
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return Response(orjson.dumps(err.status()), err.code, headers, media_type="application/json")


def _error_response(fault: Fault, resource: str, name: str, group: str) -> Response:
    why = f"injected by fault {fault.id}"
    if fault.status == 429:
        err = errors.too_many_requests(
            f"the server has received too many requests and has asked us to try again later "
            f"({why})",
            fault.retry_after,
        )
    elif fault.status == 409:
        err = errors.conflict(
            resource or "objects",
            name,
            group,
            f"the object has been modified; please apply your changes to the latest version "
            f"and try again ({why})",
        )
    else:
        err = errors.internal(why)
    return _status_response(err)
