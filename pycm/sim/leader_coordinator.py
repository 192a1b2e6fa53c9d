"""Coordinated leader election (KEP-4355): what kube-apiserver's leader-election controller
(``pkg/controlplane/controller/leaderelection``) and its LeaseCandidate garbage collector do,
behind the ``CoordinatedLeaderElection`` gate.

Candidates publish ``coordination.k8s.io/v1beta1`` LeaseCandidates naming the Lease they want
(:mod:`pycm.sim.registry.leasecandidates`). For each Lease some unexpired candidate names, an
election step (:meth:`LeaderCoordinator.reconcile`) looks at the Lease and the candidates and
does one of three things:

- **nothing** — the Lease has a live holder that is already the best candidate, or candidates
  have been pinged and have not answered yet (within ``election_duration``, 5 s);
- **ping** — a candidate that has not renewed within ``election_duration`` gets
  ``spec.pingTime`` = now, and the election waits for its ``renewTime`` (a candidate that
  answered an old ping is pinged again; one that did not answer is left out once its ping is
  older than ``election_duration``);
- **elect** — among the candidates that renewed within ``election_duration``: the strategy of
  the one with the newest binary version (two at that version asking for different strategies
  stop the election: a user error), and with ``OldestEmulationVersion`` the candidate with the
  oldest emulation version, then the oldest binary version, then the earliest created. A
  missing Lease is created for it (``leaseDurationSeconds`` 5); a Lease with no holder, or an
  expired one (``renewTime + leaseDurationSeconds`` past, by the server's clock) is given to it
  (``preferredHolder`` cleared, ``acquireTime`` unset); a live Lease held by someone else gets
  ``spec.preferredHolder`` — the holder steps down (client-go's coordinated elector stops
  renewing) and the Lease goes to the preferred candidate once it expires. ``spec.strategy`` is
  kept equal to the elected strategy.

An election is also forced when a candidate has not renewed for half of
``candidate_valid_duration`` (15 of 30 minutes), which pings it; candidates not renewed for the
whole of it are ignored, and deleted by the collector every ``gc_period`` (kube's
``LeaseCandidateGCPeriod``, 30 minutes).

Unlike kube's controller (informers, a work queue, a 5 s requeue), this one runs a step for
every contended Lease whenever a Lease or LeaseCandidate changes and at least every
``interval`` (1 s); a step is idempotent (it writes only what differs), so the extra steps
change nothing. It writes through the store in-process, as the kubelet does.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pycm.sim.objects import Obj, deep_copy
from pycm.sim.registry.leasecandidates import OLDEST_EMULATION_VERSION, Semver
from pycm.util.clock import Clock

if TYPE_CHECKING:
    from pycm.sim.store import Store
    from pycm.sim.watch import Watcher

__all__ = ["CoordinatorTimings", "LeaderCoordinator", "micro_time"]

log = logging.getLogger("pycm.sim")

MANAGER = "leader-election-controller"  # kube's controller name, the field manager of its writes
_ZERO = Semver(0, 0, 0)
_NS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class CoordinatorTimings:
    """kube's constants (seconds); tests shorten them."""

    election_duration: float = 5.0  # how long a ping waits for its answer
    lease_duration_seconds: int = 5  # of a Lease the coordinator creates or hands over
    candidate_valid_duration: float = 1800.0  # a candidate not renewed this long is ignored
    gc_period: float = 1800.0  # LeaseCandidateGCPeriod
    interval: float = 1.0  # pycm's: the longest time between two election steps


def micro_time(wall_ns: int) -> str:
    seconds, ns = divmod(wall_ns, _NS)
    stamp = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns // 1000:06d}Z"


def _time_ns(value: Any) -> int | None:
    """A (Micro)Time field in Unix nanoseconds; None when unset or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    delta = moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * _NS + delta.microseconds * 1000


def _before(a: int | None, b: int | None) -> bool:
    """metav1.MicroTime.Before: false when either is unset."""
    return a is not None and b is not None and a < b


def _spec(obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _version(candidate: Obj, key: str) -> Semver | None:
    return Semver.parse_tolerant(str(_spec(candidate).get(key) or ""))


def _compare(lhs: Obj, rhs: Obj) -> int:
    """-1: ``lhs`` is the better leader, 1: ``rhs`` is (kube's compare)."""
    result = (_version(lhs, "emulationVersion") or _ZERO).compare(
        _version(rhs, "emulationVersion") or _ZERO
    )
    if result == 0:
        result = (_version(lhs, "binaryVersion") or _ZERO).compare(
            _version(rhs, "binaryVersion") or _ZERO
        )
    if result == 0:
        created_l = _time_ns(lhs["metadata"].get("creationTimestamp")) or 0
        created_r = _time_ns(rhs["metadata"].get("creationTimestamp")) or 0
        return 1 if created_l > created_r else -1
    return result


def best_leader(candidates: list[Obj]) -> Obj | None:
    """The OldestEmulationVersion choice among candidates whose versions parse."""
    electee: Obj | None = None
    for candidate in candidates:
        if _version(candidate, "emulationVersion") is None:
            continue
        if _version(candidate, "binaryVersion") is None:
            continue
        if electee is None or _compare(electee, candidate) > 0:
            electee = candidate
    return electee


def best_strategy(candidates: list[Obj]) -> tuple[str, str]:
    """(strategy, error): the strategy of the newest binary version; an error when two
    candidates at that version disagree (or there are none)."""
    if not candidates:
        return "", "no candidates"
    first = candidates[0]
    name, strategy = first["metadata"]["name"], str(_spec(first).get("strategy") or "")
    highest = _version(first, "binaryVersion") or _ZERO
    for candidate in candidates[1:]:
        version = _version(candidate, "binaryVersion") or _ZERO
        other = str(_spec(candidate).get("strategy") or "")
        result = highest.compare(version)
        if result < 0:
            strategy, highest, name = other, version, candidate["metadata"]["name"]
        elif result == 0 and other != strategy:
            return "", (
                f'candidates "{name}", "{candidate["metadata"]["name"]}" at same binary '
                f"version but received differing strategies {strategy}, {other}"
            )
    return strategy, ""


class LeaderCoordinator:
    """The coordinator and the candidates' collector over one store (see the module)."""

    def __init__(self, store: Store, clock: Clock, timings: CoordinatorTimings | None = None):
        self.store = store
        self.clock = clock
        self.timings = timings or CoordinatorTimings()
        self._leases = store.resource("leases", "coordination.k8s.io")
        self._candidates = store.resource("leasecandidates", "coordination.k8s.io")
        self._next_gc = clock.monotonic() + self.timings.gc_period
        self._said: dict[str, str] = {}  # lease key -> the problem last logged for it

    # -- reading ---------------------------------------------------------------------------

    def _expired_candidate(self, candidate: Obj, now: int) -> bool:
        renew = _time_ns(_spec(candidate).get("renewTime"))
        valid = int(self.timings.candidate_valid_duration * _NS)
        return renew is None or renew + valid < now

    def _lease_expired(self, lease: Obj, now: int) -> bool:
        spec = _spec(lease)
        renew = _time_ns(spec.get("renewTime"))
        duration = spec.get("leaseDurationSeconds")
        return renew is None or not isinstance(duration, int) or renew + duration * _NS < now

    def contended(self) -> list[tuple[str, str]]:
        """(namespace, lease name) of every Lease an unexpired candidate names, sorted."""
        now = self.clock.wall_ns()
        candidates, _ = self.store.list(self._candidates)
        keys = {
            (c["metadata"].get("namespace", ""), str(_spec(c).get("leaseName") or ""))
            for c in candidates
            if _spec(c).get("leaseName") and not self._expired_candidate(c, now)
        }
        return sorted(keys)

    def _candidates_for(self, namespace: str, lease_name: str, now: int) -> list[Obj]:
        listed, _ = self.store.list(self._candidates, namespace)
        return [
            c
            for c in listed
            if _spec(c).get("leaseName") == lease_name and not self._expired_candidate(c, now)
        ]

    def _election_needed(self, candidates: list[Obj], lease: Obj | None, now: int) -> bool:
        if lease is None:
            return True
        holder = _spec(lease).get("holderIdentity") or ""
        if self._lease_expired(lease, now) or not holder:
            return True
        # Every half validity, an election pings every candidate (so live ones are not
        # collected).
        half = int(self.timings.candidate_valid_duration / 2 * _NS)
        for candidate in candidates:
            renew = _time_ns(_spec(candidate).get("renewTime"))
            if renew is not None and renew + half < now:
                return True
        strategy, error = best_strategy(candidates)
        if error or strategy != OLDEST_EMULATION_VERSION:
            return False
        electee = best_leader(candidates)
        return electee is not None and electee["metadata"]["name"] != holder

    # -- the election step -----------------------------------------------------------------

    def reconcile(self, namespace: str, lease_name: str) -> str:
        """One election step for the Lease; returns what it did ("", "ping", "created",
        "updated") for tests and logs."""
        now = self.clock.wall_ns()
        key = f"{namespace}/{lease_name}"
        candidates = self._candidates_for(namespace, lease_name, now)
        if not candidates:
            return ""
        lease = self.store.peek(self._leases, namespace, lease_name)
        if not self._election_needed(candidates, lease, now):
            return ""
        window = int(self.timings.election_duration * _NS)
        can_vote = True
        pinged = False
        for candidate in candidates:
            spec = _spec(candidate)
            ping = _time_ns(spec.get("pingTime"))
            renew = _time_ns(spec.get("renewTime"))
            if ping is not None and ping + window > now and _before(renew, ping):
                can_vote = False  # pinged, not answered yet: wait
                continue
            if renew is not None and renew + window > now:
                continue  # renewed recently: counts as an answer
            if ping is None or (ping + window < now and _before(ping, renew)):
                self._ping(candidate, now)
                pinged = True
                can_vote = False
        if not can_vote:
            return "ping" if pinged else ""
        for candidate in candidates:
            spec = _spec(candidate)
            ping = _time_ns(spec.get("pingTime"))
            renew = _time_ns(spec.get("renewTime"))
            if ping is None or _before(ping, renew):
                continue
            if ping + window > now:
                return ""  # still waiting for an answer
        acked = [
            c
            for c in candidates
            if (renew := _time_ns(_spec(c).get("renewTime"))) is not None and renew + window > now
        ]
        if not acked:
            self._say(key, "no available candidates")
            return ""
        strategy, error = best_strategy(acked)
        if error:
            self._say(key, error)
            return ""
        self._said.pop(key, None)
        holder: str | None = None
        if strategy == OLDEST_EMULATION_VERSION:
            electee = best_leader(acked)
            if electee is None:
                return ""
            holder = electee["metadata"]["name"]
        if lease is None:
            return self._create(namespace, lease_name, strategy, holder, now)
        return self._update(lease, key, strategy, holder, now)

    def _say(self, key: str, problem: str) -> None:
        """Log why an election cannot proceed, once until it changes (steps repeat every
        ``interval``; kube logs each failed step, but it steps only on events)."""
        if self._said.get(key) != problem:
            self._said[key] = problem
            log.info("leader election %s: %s", key, problem)

    def _ping(self, candidate: Obj, now: int) -> None:
        old = self.store.peek(
            self._candidates, candidate["metadata"].get("namespace"), candidate["metadata"]["name"]
        )
        if old is None:
            return
        new = deep_copy(old)
        new.setdefault("spec", {})["pingTime"] = micro_time(now)
        self.store.replace(self._candidates, new, old, manager=MANAGER)

    def _create(
        self, namespace: str, name: str, strategy: str, holder: str | None, now: int
    ) -> str:
        spec: dict[str, Any] = {
            "strategy": strategy,
            "leaseDurationSeconds": self.timings.lease_duration_seconds,
            "renewTime": micro_time(now),
        }
        if holder is not None:
            spec["holderIdentity"] = holder
        self.store.create(
            self._leases,
            {"metadata": {"name": name, "namespace": namespace}, "spec": spec},
            namespace,
            manager=MANAGER,
        )
        if holder is not None:
            log.info('leader election: created lease %s/%s for "%s"', namespace, name, holder)
        else:
            log.info("leader election: created lease %s/%s without leader", namespace, name)
        return "created"

    def _update(self, lease: Obj, key: str, strategy: str, holder: str | None, now: int) -> str:
        old = self.store.peek(
            self._leases, lease["metadata"].get("namespace"), lease["metadata"]["name"]
        )
        if old is None:
            return ""
        new = deep_copy(old)
        spec = new.setdefault("spec", {})
        current = spec.get("holderIdentity") or ""
        expired = self._lease_expired(old, now)
        if spec.get("strategy") != strategy:
            log.info('leader election: lease %s strategy changed to "%s"', key, strategy)
            spec["strategy"] = strategy
        if holder is not None and (not current or (expired and current != holder)):
            if not current:
                log.info('leader election: lease %s had no holder, holder now "%s"', key, holder)
            else:
                log.info('leader election: lease %s expired, holder now "%s"', key, holder)
            spec.pop("preferredHolder", None)
            spec["holderIdentity"] = holder
            spec["renewTime"] = micro_time(now)
            spec["leaseDurationSeconds"] = self.timings.lease_duration_seconds
            spec.pop("acquireTime", None)
        elif holder is not None and holder != current and spec.get("preferredHolder") != holder:
            log.info(
                'leader election: lease %s preferred holder "%s" (held by "%s")',
                key,
                holder,
                current,
            )
            spec["preferredHolder"] = holder
        if new == old:
            return ""
        self.store.replace(self._leases, new, old, manager=MANAGER)
        return "updated"

    # -- garbage collection ----------------------------------------------------------------

    def collect_garbage(self) -> int:
        """Delete every candidate not renewed within its validity; returns how many."""
        now = self.clock.wall_ns()
        listed, _ = self.store.list(self._candidates)
        gone = 0
        for candidate in listed:
            if self._expired_candidate(candidate, now):
                meta = candidate["metadata"]
                if self.store.peek(self._candidates, meta.get("namespace"), meta["name"]):
                    self.store.delete(self._candidates, meta.get("namespace"), meta["name"], None)
                    gone += 1
        if gone:
            log.info("leader election: collected %d expired lease candidate(s)", gone)
        return gone

    # -- running ---------------------------------------------------------------------------

    def step(self) -> None:
        """An election step for every contended Lease; the collector when it is due."""
        for namespace, name in self.contended():
            self.reconcile(namespace, name)
        if self.clock.monotonic() >= self._next_gc:
            self._next_gc = self.clock.monotonic() + self.timings.gc_period
            self.collect_garbage()

    async def run(self) -> None:
        """Step on every Lease or LeaseCandidate change and every ``interval``; until
        cancelled."""
        watchers = self._watch()
        try:
            while True:
                for watcher in watchers:
                    while watcher.pop() is not None:
                        pass
                if any(w.closed for w in watchers):  # dropped (a fault): watch again
                    for watcher in watchers:
                        watcher.stop()
                    watchers = self._watch()
                self.step()
                await self._wait(watchers)
        finally:
            for watcher in watchers:
                watcher.stop()

    def _watch(self) -> list[Watcher]:
        return [self.store.watch(self._candidates), self.store.watch(self._leases)]

    async def _wait(self, watchers: list[Watcher]) -> None:
        waits = [
            asyncio.ensure_future(self.clock.sleep(self.timings.interval)),
            *(asyncio.ensure_future(_changed(w)) for w in watchers),
        ]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
            await asyncio.gather(*waits, return_exceptions=True)


async def _changed(watcher: Watcher) -> None:
    """Until ``watcher`` has an event (or closes), without taking it."""
    while not watcher.pending and not watcher.closed:
        watcher._wake.clear()
        await watcher._wake.wait()
