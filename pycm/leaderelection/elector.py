# Over 500 lines, one concept: client-go's leaderelection.go state machine.
"""LeaderElector: client-go's leader election (RunOrDie) on a resource lock.

The algorithm, as client-go has it (tools/leaderelection/leaderelection.go):

- **acquire**: try every RetryPeriod × (1 + rand × 1.2) until tryAcquireOrRenew succeeds.
- **renew**: each round retries tryAcquireOrRenew every RetryPeriod for at most RenewDeadline;
  a round without success ends leadership. Between rounds it waits RetryPeriod.
- **tryAcquireOrRenew** (the clock is sampled once, first):
  1. fast path — if leading and the observed lease is still valid, update directly (keeping
     acquireTime and transitions); on error fall to the slow path;
  2. get; not found → create with us as holder;
  3. if the record differs from the last one observed, store it and the local time it was
     observed. Valid ⇔ observedTime + leaseDurationSeconds > now. The record's renewTime is
     never used for expiry: clocks of different machines are not compared. Held by another and
     valid → fail;
  4. if we were the holder keep acquireTime and transitions (a slow-path renew), otherwise
     transitions + 1;
  5. update (optimistic: a concurrent writer makes it conflict); on success store the record.
- **release** (ReleaseOnCancel): get; if still the holder, write holder "" with a 1 s duration.
- **coordinated** (``config.coordinated``, KEP-4355; client-go's tryCoordinatedRenew replaces
  tryAcquireOrRenew in both loops): get (not found → fail: the API server's coordinator
  creates the Lease); observe a change; an expired record → fail; a record naming another
  holder → fail; a record naming this elector but with a ``preferredHolder`` → fail (the
  "end of term": the leader stops renewing and the coordinator hands the Lease over once it
  expires); otherwise update, keeping acquireTime, transitions and strategy. The elector never
  creates the Lease nor takes a free or expired one: the coordinator writes it as holder.

pycm's additions: the reconcile gate (``elector.gate``, :mod:`pycm.leaderelection.gate`), open
only while the last successful renew is younger than RenewDeadline by the local clock; every
attempt, renewal, failure (with its reason), release and loss is a trace event; each lock call
is bounded (KCM's lock client timeout, max(1 s, RenewDeadline / 2), and the round's remaining
RenewDeadline) so a hung API call cannot stretch a renew round; the leading work is stopped and
awaited *before* a release, so nothing reconciles after the lease is let go.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Awaitable
from typing import Any, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from pycm.leaderelection.config import JITTER_FACTOR, LeaderElectionConfig
from pycm.leaderelection.gate import RenewGate
from pycm.leaderelection.record import LeaderElectionRecord
from pycm.leaderelection.resourcelock import LockConflict, LockError, LockNotFound
from pycm.trace.bus import Bus, default_bus
from pycm.trace.context import error_text, root_context
from pycm.trace.kinds import (
    AcquireResult,
    LeaderElectionConfigured,
    LeaderObserved,
    LeaseAcquireAttempted,
    LeaseAcquired,
    LeaseCoordinationObserved,
    LeaseLost,
    LeaseReleased,
    LeaseRenewed,
    LeaseRenewFailed,
    RenewFailureReason,
)
from pycm.util.backoff import jittered
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["LeaderElector", "LeaderMetrics"]

log = logging.getLogger(__name__)

T = TypeVar("T")


# Renew rounds last from a few ms up to --leader-elect-renew-deadline (10 s by default).
_RENEW_ROUND_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 30)


class LeaderMetrics:
    """client-go's leader-election metrics on a Prometheus registry, plus pycm's renew round
    (how close a renew came to the deadline: the alert "renew latency near the deadline")."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=registry,
        )
        self.slowpath_total = Counter(
            "leader_election_slowpath_total",
            "Total number of slow path exercised in renewing leader leases.",
            ["name"],
            registry=registry,
        )
        self.renew_round = Histogram(
            "pycm_leader_election_renew_round_seconds",
            "Time from the start of a renew round to the leader's successful renew, every "
            "attempt of the round included; the round fails at the renew deadline.",
            ["name"],
            buckets=_RENEW_ROUND_BUCKETS,
            registry=registry,
        )
        self.renew_deadline = Gauge(
            "pycm_leader_election_renew_deadline_seconds",
            "The leader's --leader-elect-renew-deadline, to compare renew rounds against.",
            ["name"],
            registry=registry,
        )


class _Timeout(Exception):
    pass


@dataclasses.dataclass(slots=True)
class _Attempt:
    ok: bool
    result: AcquireResult = AcquireResult.HELD_BY_OTHER
    reason: RenewFailureReason | None = None
    error: str = ""
    fast_path: bool = False


class LeaderElector:
    """Runs one election. ``await run()`` returns when leadership ends (or the lease was never
    won before cancellation); ``on_stopped_leading`` has run by then either way."""

    def __init__(
        self,
        config: LeaderElectionConfig,
        *,
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        rng: random.Random | None = None,
        metrics: LeaderMetrics | None = None,
    ) -> None:
        config.check()
        self.config = config
        self._lock = config.lock
        self._clock = clock
        self._bus = bus or default_bus()
        self._rng = rng or random.Random()
        self._metrics = metrics
        self._name = config.name or config.lock.describe()
        self._lease = config.lock.describe()
        if metrics is not None:
            metrics.renew_deadline.labels(self._name).set(config.renew_deadline)
            # Every candidate reports 0 from the start, as client-go's NewLeaderElector does: a
            # standby with no series would leave "no replica leads" (max of the gauge < 1)
            # with nothing to compare once the leader's series is gone.
            metrics.master_status.labels(self._name).set(0)
        # The last record seen or written, its bytes, and the local monotonic time it was seen.
        self._observed = LeaderElectionRecord()
        self._observed_raw = b""
        self._observed_time = 0.0
        self._reported_leader = ""
        self._reported_coordination = ("", "")  # (strategy, preferred holder) last reported
        self._lock_timeout = max(1.0, config.renew_deadline / 2)
        self.lost_reason = ""
        # Open while the last successful acquire/renew is younger than RenewDeadline by the
        # local monotonic clock: workers start no reconcile while it is closed (gate.py).
        self.gate = RenewGate(clock, config.renew_deadline)
        self._event_tasks: set[asyncio.Task[Any]] = set()

    # -- state ----------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self._lock.identity

    def is_leader(self) -> bool:
        return self._observed.holder_identity == self._lock.identity

    def get_leader(self) -> str:
        return self._observed.holder_identity

    @property
    def observed_time(self) -> float:
        return self._observed_time

    @property
    def observed_record(self) -> LeaderElectionRecord:
        return self._observed

    def _is_lease_valid(self, now: float) -> bool:
        return self._observed_time + self._observed.lease_duration_seconds > now

    def _set_observed(
        self, record: LeaderElectionRecord, raw: bytes | None, not_before: float
    ) -> None:
        self._observed = record
        self._observed_raw = record.raw() if raw is None else raw
        # Go's clock always moves between sampling `now` and storing the observation; a fake
        # (or coarse) clock may not, and a lease seen changing this very attempt must count as
        # valid for it (else a zero-duration lease would be taken on first sight).
        self._observed_time = max(self._clock.monotonic(), not_before + 1e-9)

    # -- the algorithm --------------------------------------------------------------------

    async def _bounded(self, call: Awaitable[T], seconds: float) -> T:
        """Await ``call`` for at most ``seconds`` of the injected clock."""
        task: asyncio.Task[T] = asyncio.ensure_future(call)
        timer = asyncio.ensure_future(self._clock.sleep(seconds))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if task.cancelled():
            raise _Timeout()
        return task.result()

    async def try_acquire_or_renew(self, bound: float | None = None) -> _Attempt:
        clock = self._clock
        now = clock.monotonic()
        now_wall = clock.wall_ns()
        limit = self._lock_timeout if bound is None else min(self._lock_timeout, bound)
        me = self._lock.identity
        record = LeaderElectionRecord(
            holder_identity=me,
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time_ns=now_wall,
            renew_time_ns=now_wall,
        )
        # 1. Fast path: we lead and our own observation is still valid.
        if self.is_leader() and self._is_lease_valid(now):
            renewed = dataclasses.replace(
                record,
                acquire_time_ns=self._observed.acquire_time_ns,
                leader_transitions=self._observed.leader_transitions,
            )
            try:
                await self._bounded(self._lock.update(renewed), limit)
            except (LockError, _Timeout) as exc:
                log.info(
                    "failed to update lock optimistically (%s), falling back to slow path", exc
                )
            else:
                self._set_observed(renewed, None, now)
                return _Attempt(True, AcquireResult.ACQUIRED, fast_path=True)
        # 2. Get, or create when missing.
        try:
            old, raw = await self._bounded(self._lock.get(), limit)
        except LockNotFound:
            try:
                await self._bounded(self._lock.create(record), limit)
            except (LockError, _Timeout) as exc:
                return self._failed(exc, "error initially creating leader election record")
            self._set_observed(record, None, now)
            return _Attempt(True, AcquireResult.CREATED)
        except (LockError, _Timeout) as exc:
            return self._failed(exc, f"error retrieving resource lock {self._lease}")
        # 3. Observe a change; respect another holder's valid term.
        if raw != self._observed_raw:
            self._set_observed(old, raw, now)
        if old.holder_identity and self._is_lease_valid(now) and not self.is_leader():
            return _Attempt(
                False,
                AcquireResult.HELD_BY_OTHER,
                RenewFailureReason.NOT_HOLDER,
                f"lock is held by {old.holder_identity} and has not yet expired",
            )
        # 4. Keep our own history, or count a takeover.
        if self.is_leader():
            record = dataclasses.replace(
                record,
                acquire_time_ns=old.acquire_time_ns,
                leader_transitions=old.leader_transitions,
            )
            if self._metrics is not None:
                self._metrics.slowpath_total.labels(self._name).inc()
        else:
            record = dataclasses.replace(record, leader_transitions=old.leader_transitions + 1)
        # 5. Update with the resourceVersion we read.
        try:
            await self._bounded(self._lock.update(record), limit)
        except (LockError, _Timeout) as exc:
            return self._failed(exc, "failed to update lock")
        self._set_observed(record, None, now)
        return _Attempt(True, AcquireResult.ACQUIRED)

    async def try_coordinated_renew(self, bound: float | None = None) -> _Attempt:
        """client-go's tryCoordinatedRenew (see the module docstring)."""
        clock = self._clock
        now = clock.monotonic()
        now_wall = clock.wall_ns()
        limit = self._lock_timeout if bound is None else min(self._lock_timeout, bound)
        record = LeaderElectionRecord(
            holder_identity=self._lock.identity,
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time_ns=now_wall,
            renew_time_ns=now_wall,
        )
        # 1. Get (never create: the coordinator does).
        try:
            old, raw = await self._bounded(self._lock.get(), limit)
        except LockNotFound:
            log.info("lease lock %s not found: waiting for the coordinator", self._lease)
            return _Attempt(
                False,
                AcquireResult.NOT_ELECTED,
                RenewFailureReason.NOT_HOLDER,
                f"lease {self._lease} not found",
            )
        except (LockError, _Timeout) as exc:
            return self._failed(exc, f"error retrieving resource lock {self._lease}")
        # 2. Observe a change; an expired record or another holder's is not ours to take.
        if raw != self._observed_raw:
            self._set_observed(old, raw, now)
        if self._observed_time + self._observed.lease_duration_seconds < now:
            return _Attempt(
                False,
                AcquireResult.NOT_ELECTED,
                RenewFailureReason.NOT_HOLDER,
                f"lease {self._lease} has expired",
            )
        if not self.is_leader():
            return _Attempt(
                False,
                AcquireResult.HELD_BY_OTHER if old.holder_identity else AcquireResult.NOT_ELECTED,
                RenewFailureReason.NOT_HOLDER,
                f"lease is held by {old.holder_identity or 'nobody'} and has not yet expired",
            )
        # 2b. The coordinator named a successor: do not renew ("end of term").
        if old.preferred_holder:
            return _Attempt(
                False,
                AcquireResult.HELD_BY_OTHER,
                RenewFailureReason.STEPPED_DOWN,
                f"lease is marked as 'end of term' (preferred holder {old.preferred_holder})",
            )
        # 3. Keep our history (the record names us) and the coordinator's strategy.
        record = dataclasses.replace(
            record,
            acquire_time_ns=old.acquire_time_ns,
            leader_transitions=old.leader_transitions,
            strategy=old.strategy,
        )
        if self._metrics is not None:
            self._metrics.slowpath_total.labels(self._name).inc()
        try:
            await self._bounded(self._lock.update(record), limit)
        except (LockError, _Timeout) as exc:
            return self._failed(exc, "failed to update lock")
        self._set_observed(record, None, now)
        return _Attempt(True, AcquireResult.ACQUIRED)

    async def _try(self, bound: float | None = None) -> _Attempt:
        if self.config.coordinated:
            return await self.try_coordinated_renew(bound)
        return await self.try_acquire_or_renew(bound)

    @staticmethod
    def _failed(exc: Exception, what: str) -> _Attempt:
        """A failed lock call, logged as client-go logs it (an error each attempt): without the
        line an operator whose manager may not read or write its Lease (RBAC, a bad name) saw
        only "attempting to acquire leader lease" and nothing after it."""
        if isinstance(exc, LockConflict):
            attempt = _Attempt(False, AcquireResult.ERROR, RenewFailureReason.CONFLICT, str(exc))
        elif isinstance(exc, _Timeout):
            attempt = _Attempt(
                False, AcquireResult.ERROR, RenewFailureReason.TIMEOUT, "lock call timed out"
            )
        else:
            attempt = _Attempt(
                False, AcquireResult.ERROR, RenewFailureReason.API_ERROR, error_text(exc)
            )
        log.error("%s: %s", what, attempt.error)
        return attempt

    def _maybe_report_coordination(self) -> None:
        """A change of the coordinator's fields (strategy, preferredHolder) on the lease."""
        seen = (self._observed.strategy, self._observed.preferred_holder)
        if seen == self._reported_coordination:
            return
        self._reported_coordination = seen
        self._bus.point(
            LeaseCoordinationObserved(
                lease=self._lease,
                holder=self._observed.holder_identity,
                preferred_holder=self._observed.preferred_holder,
                strategy=self._observed.strategy,
            )
        )

    def _maybe_report_transition(self) -> None:
        self._maybe_report_coordination()
        holder = self._observed.holder_identity
        if holder == self._reported_leader:
            return
        old, self._reported_leader = self._reported_leader, holder
        skew_ms = 0.0
        if self._observed.renew_time_ns:
            skew_ms = (self._observed.renew_time_ns - self._clock.wall_ns()) / 1e6
        self._bus.point(
            LeaderObserved(
                lease=self._lease,
                old_holder=old,
                new_holder=holder,
                transitions=self._observed.leader_transitions,
                lease_duration_s=float(self._observed.lease_duration_seconds),
                skew_ms=skew_ms,
            )
        )
        callback = self.config.callbacks.on_new_leader
        if callback is not None:
            try:
                callback(holder)
            except Exception:
                log.exception("OnNewLeader callback failed")

    async def _acquire(self) -> None:
        started = self._clock.monotonic()
        log.info("attempting to acquire leader lease %s...", self._lease)
        while True:
            t0 = self._clock.monotonic()
            attempt = await self._try()
            self._maybe_report_transition()
            self._bus.point(
                LeaseAcquireAttempted(
                    lease=self._lease,
                    identity=self.identity,
                    result=attempt.result
                    if not attempt.ok or attempt.result is not AcquireResult.HELD_BY_OTHER
                    else AcquireResult.ACQUIRED,
                    holder=self._observed.holder_identity,
                    error=attempt.error,
                )
            )
            if attempt.ok:
                self.gate.renewed(t0)
                waited_ms = (self._clock.monotonic() - started) * 1000
                log.info("successfully acquired lease %s", self._lease)
                if self._metrics is not None:
                    self._metrics.master_status.labels(self._name).set(1)
                self._bus.point(
                    LeaseAcquired(
                        lease=self._lease,
                        identity=self.identity,
                        transitions=self._observed.leader_transitions,
                        waited_ms=waited_ms,
                    )
                )
                self._spawn_event(f"{self.identity} became leader")
                return
            await self._clock.sleep(jittered(self.config.retry_period, JITTER_FACTOR, self._rng))

    async def _renew(self) -> str:
        """Renew until a round fails; returns the reason leadership ended."""
        cfg = self.config
        clock = self._clock
        while True:
            deadline = clock.monotonic() + cfg.renew_deadline
            last: _Attempt | None = None
            while True:
                remaining = deadline - clock.monotonic()
                if remaining <= 0:
                    break
                t0 = clock.monotonic()
                attempt = await self._try(bound=remaining)
                self._maybe_report_transition()
                latency_ms = (clock.monotonic() - t0) * 1000
                if attempt.ok:
                    self.gate.renewed(t0)
                    if self._metrics is not None:
                        started = deadline - cfg.renew_deadline
                        self._metrics.renew_round.labels(self._name).observe(
                            clock.monotonic() - started
                        )
                    self._bus.point(
                        LeaseRenewed(
                            lease=self._lease,
                            identity=self.identity,
                            latency_ms=latency_ms,
                            fast_path=attempt.fast_path,
                        )
                    )
                    last = attempt
                    break
                last = attempt
                if not self.is_leader():
                    # The lease names another holder (or none): whatever our clock says, we
                    # no longer lead — fence our writes now, not at the renew deadline.
                    self.gate.close()
                self._bus.point(
                    LeaseRenewFailed(
                        lease=self._lease,
                        identity=self.identity,
                        reason=attempt.reason or RenewFailureReason.API_ERROR,
                        latency_ms=latency_ms,
                        error=attempt.error,
                    )
                )
                wait = min(cfg.retry_period, deadline - clock.monotonic())
                if wait > 0:
                    await clock.sleep(wait)
            if last is None or not last.ok:
                self._bus.point(
                    LeaseRenewFailed(
                        lease=self._lease,
                        identity=self.identity,
                        reason=RenewFailureReason.TIMEOUT,
                        latency_ms=cfg.renew_deadline * 1000,
                        error=last.error if last else "",
                    )
                )
                if last is not None and last.reason is RenewFailureReason.STEPPED_DOWN:
                    return (
                        "stepped down: the coordinator prefers "
                        f"{self._observed.preferred_holder or 'another candidate'}"
                    )
                return "failed to renew lease within the renew deadline"
            await clock.sleep(cfg.retry_period)

    async def _release(self) -> None:
        """Give the lease up if we still hold it (bounded by RenewDeadline; retry on conflict)."""
        if not self.is_leader():
            return
        clock = self._clock
        deadline = clock.monotonic() + self.config.renew_deadline
        while (remaining := deadline - clock.monotonic()) > 0:
            try:
                old, _ = await self._bounded(self._lock.get(), min(self._lock_timeout, remaining))
                if old.holder_identity != self.identity:
                    return
                now_wall = clock.wall_ns()
                released = LeaderElectionRecord(
                    holder_identity="",
                    lease_duration_seconds=1,
                    acquire_time_ns=now_wall,
                    renew_time_ns=now_wall,
                    leader_transitions=old.leader_transitions,
                )
                await self._bounded(self._lock.update(released), min(self._lock_timeout, remaining))
            except LockConflict:
                await clock.sleep(min(self.config.retry_period, max(0.0, remaining)))
                continue
            except (LockError, _Timeout) as exc:
                log.error("failed to release lock %s: %s", self._lease, exc)
                return
            self._set_observed(released, None, clock.monotonic())
            self._bus.point(LeaseReleased(lease=self._lease, identity=self.identity))
            log.info("released lease %s", self._lease)
            return

    def _spawn_event(self, message: str) -> None:
        task = asyncio.get_running_loop().create_task(
            self._lock.record_event(message), name="leaderelection: record event"
        )
        self._event_tasks.add(task)
        task.add_done_callback(self._event_tasks.discard)

    async def run(self) -> None:
        """Acquire, lead (``on_started_leading`` as a task) and renew; stop and (optionally)
        release on cancellation or loss; always end with ``on_stopped_leading``."""
        callbacks = self.config.callbacks
        leading: asyncio.Task[None] | None = None
        self.gate.close()
        self._configured()
        try:
            await self._acquire()

            async def lead() -> None:
                await callbacks.on_started_leading()

            leading = asyncio.get_running_loop().create_task(lead(), name="leaderelection: leading")
            # Renewals are traces of their own, not children of whatever step started the
            # election (start-up): the renewer starts in a context with no current span.
            renewing = asyncio.get_running_loop().create_task(
                self._renew(), name="leaderelection: renew", context=root_context()
            )
            try:
                pending = {leading, renewing}
                while renewing in pending:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    if leading in done and not leading.cancelled() and leading.exception():
                        break  # the leading work failed: stop leading
                if renewing.done():
                    self.lost_reason = renewing.result()
                    self._lost(self.lost_reason)
            finally:
                self.gate.close()  # before the leading work is stopped (bounded, not at once)
                renewing.cancel()
                await asyncio.gather(renewing, return_exceptions=True)
                await self._stop_leading(leading)
                if self.config.release_on_cancel:
                    await self._release()
                if leading.done() and not leading.cancelled() and leading.exception():
                    self.lost_reason = self.lost_reason or "leading work failed"
                    self._lost(self.lost_reason)
                    raise leading.exception()  # type: ignore[misc]
        finally:
            if self._metrics is not None:
                self._metrics.master_status.labels(self._name).set(0)
            try:
                callbacks.on_stopped_leading()
            except Exception:
                log.exception("OnStoppedLeading callback failed")
            if self._event_tasks:
                await asyncio.wait(set(self._event_tasks), timeout=1.0)

    def _configured(self) -> None:
        """The timings this run campaigns with, once, before the first attempt: the viewers
        read the renew deadline and lease duration from the trace, not from flags of theirs."""
        config = self.config
        self._bus.point(
            LeaderElectionConfigured(
                lease=self._lease,
                identity=self.identity,
                lease_duration_s=config.lease_duration,
                renew_deadline_s=config.renew_deadline,
                retry_period_s=config.retry_period,
                coordinated=config.coordinated,
                release_on_cancel=config.release_on_cancel,
            )
        )

    def _lost(self, reason: str) -> None:
        log.info("leaderelection lost: %s", reason)
        self._bus.point(LeaseLost(lease=self._lease, identity=self.identity, reason=reason))
        self._spawn_event(f"{self.identity} stopped leading")

    async def _stop_leading(self, leading: asyncio.Task[None]) -> None:
        if leading.done():
            return
        leading.cancel()
        done, _ = await asyncio.wait({leading}, timeout=self.config.stop_timeout)
        if not done:
            log.error("leading work did not stop within %.1fs", self.config.stop_timeout)
