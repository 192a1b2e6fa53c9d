"""A fault: what every kind shares (its scope, its bounds, its wire form), the two kinds of
fault (:class:`LastingFault`, which says what it does and acts on requests while active, and
:class:`Action`, which acts once and says what it did), what a lasting one sees of a request
(:class:`Intercepted`) and the subset of the fault set a kind acts through (:class:`FaultHost`).
The kinds themselves are in :mod:`pycm.sim.faults.kinds`."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from starlette.responses import Response

from pycm.sim import errors
from pycm.sim.kubelet import Kubelet
from pycm.sim.store import Store
from pycm.util.clock import Clock

__all__ = ["TICK", "Action", "Fault", "FaultHost", "Intercepted", "LastingFault", "invalid"]

# How often the expiry ticker and a held request look again (a paused kubelet resumes, a held
# request is released, within this).
TICK = 0.05


def invalid(message: str) -> errors.APIError:
    """A refused fault: 422 Invalid."""
    return errors.APIError(422, "Invalid", f"invalid fault: {message}")


class FaultHost(Protocol):
    """The subset of :class:`~pycm.sim.faults.active.Faults` that a kind acts through."""

    store: Store
    clock: Clock
    rng: random.Random  # the seeded draw of an error fault's rate
    kubelet: Callable[[], Kubelet | None]

    def active_faults(self) -> Iterable[LastingFault]: ...

    def is_active(self, fault: LastingFault) -> bool: ...

    def use(self, fault: LastingFault) -> None: ...

    def end(self, fault: LastingFault, why: str) -> None: ...

    def expire(self) -> None: ...


@dataclass(slots=True)
class Intercepted:
    """What a fault sees of one request (before authentication) and may leave for later."""

    verb: str  # kube's verb
    resource: str  # plural, or plural/subresource
    namespace: str
    user: str  # "" when the token names no user
    plural: str  # the resource alone, for a Status body's details
    name: str
    group: str
    scope: MutableMapping[str, Any]  # the request's ASGI scope
    # Latency owed by the faults of the current phase: slept before the next phase runs.
    delay: float = 0.0


@dataclass
class Fault(ABC):
    """What every fault shares: its id, scope and bounds, and its wire form, which carries its
    description. ``count`` is what is left of its count bound.

    A kind is a concrete subclass of one of the two kinds of fault, which differ in what they
    define: a :class:`LastingFault` is active until a bound ends it and says what it does
    (``what``); an :class:`Action` acts once when added (``act``) and says what it did
    (``done``). Each names itself (``kind``) and declares the JSON fields of its own
    (``own_fields``); :data:`pycm.sim.faults.kinds.KINDS` lists them. What a kind must define
    is abstract, so a kind that misses one cannot be built (and mypy says so).
    """

    kind: ClassVar[str]
    own_fields: ClassVar[frozenset[str]] = frozenset()

    id: str
    verb: str | None = None
    resource: str | None = None
    namespace: str | None = None
    user: str | None = None
    count: int | None = None
    duration: float | None = None
    expires_at: float | None = None  # on the Faults' clock (monotonic)
    hits: int = 0

    @abstractmethod
    def describe(self) -> str:
        """One line for the log and the wire form's ``description``."""

    def own_json(self) -> dict[str, Any]:
        """This kind's fields in the wire form (after the shared ones)."""
        return {}

    def matches(self, verb: str, resource: str, namespace: str, user: str) -> bool:
        """An absent field matches anything; ``resource`` also matches its subresources."""
        return (
            (self.verb is None or self.verb == verb)
            and (self.resource is None or self.resource in (resource, resource.split("/")[0]))
            and (self.namespace is None or self.namespace == namespace)
            and (self.user is None or self.user == user)
        )

    def scope_text(self) -> str:
        scope = f"{self.verb or 'every verb'} {self.resource or 'every resource'}"
        if self.namespace:
            scope += f" in namespace {self.namespace}"
        if self.user:
            scope += f" for user {self.user}"
        return scope

    def to_json(self, now: float) -> dict[str, Any]:
        body: dict[str, Any] = {"id": self.id, "kind": self.kind, "description": self.describe()}
        for key, value in (
            ("verb", self.verb),
            ("resource", self.resource),
            ("namespace", self.namespace),
            ("user", self.user),
            ("count", self.count),
            ("duration", self.duration),
        ):
            if value is not None:
                body[key] = value
        body.update(self.own_json())
        if self.expires_at is not None:
            body["remainingSeconds"] = round(max(0.0, self.expires_at - now), 3)
        body["hits"] = self.hits
        return body


@dataclass
class LastingFault(Fault):
    """A fault that is active from its addition until a bound (count, duration) is reached or
    it is cleared, acting on the requests it matches in its ``phase``."""

    # When it acts on a request: phases run in increasing order, each over the faults of its
    # phase active at its start. None: it never sees a request.
    phase: ClassVar[int | None] = None

    @abstractmethod
    def what(self) -> str:
        """The description of the fault without its bounds."""

    def configure(self, spec: Mapping[str, Any]) -> None:
        """Read this kind's own fields from ``spec`` (after the shared ones and the bound);
        raise :func:`invalid` for a bad one."""

    def start(self, host: FaultHost) -> None:
        """Called once it is active; raising :func:`invalid` takes it back."""

    def stop(self, host: FaultHost) -> None:
        """Called once it is no longer active (cleared, expired or used up)."""

    async def intercept(self, request: Intercepted, host: FaultHost) -> Response | None:
        """Act on a request it matches (in its phase); a response answers the request."""
        return None

    def describe(self) -> str:
        bounds = []
        if self.count is not None:
            bounds.append(f"count {self.count}")
        if self.duration is not None:
            bounds.append(f"for {self.duration}s")
        return f"{self.what()} ({', '.join(bounds)})"


@dataclass
class Action(Fault):
    """A one-shot fault: done when added (``act``), never active, needs no bound."""

    result: dict[str, Any] | None = None  # what it did

    @abstractmethod
    def act(self, host: FaultHost) -> dict[str, Any]:
        """Do it now; the result is what :meth:`done` describes and the wire form carries."""

    @abstractmethod
    def done(self, result: dict[str, Any]) -> str:
        """What it did, from its result."""

    def describe(self) -> str:
        return self.done(self.result or {})

    def own_json(self) -> dict[str, Any]:
        return {} if self.result is None else {"result": self.result}
