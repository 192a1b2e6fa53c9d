"""A member's Lease: renew it with the member's view, read the ring's Leases, follow the claims.

Every ``retry_period`` the member:

1. asks :class:`~pycm.sharding.claims.MemberClaims` which view to publish (the new one once the
   keys it would drop are drained, else the one it holds);
2. writes its own Lease (``coordination.k8s.io/v1``, named ``<ring>-<identity>``, labelled
   ``sharding.pycm.io/ring=<ring>``): ``holderIdentity`` and the renew fields as a leader lease
   (so ``kubectl get leases`` reads it), the view in the annotation ``sharding.pycm.io/view``
   and the digest of its claim's layout in ``sharding.pycm.io/layout``;
3. then lists the ring's Leases from the API server itself (``resourceVersion`` unset: a quorum
   read, never a cache — the claims' first rule) and hands them to the claims, with the ring's
   layout: the Lease ``<ring>-layout``, same label, no holder, its knots in
   ``sharding.pycm.io/layout-knots`` (none: the identity layout);
4. when it is settled and has a :class:`~pycm.sharding.layout_writer.LayoutWriter`, lets it
   write a new layout if the current one is clearly unbalanced (the writer's hysteresis).

A write that fails is retried at the next period; when the last success is older than
``renew_deadline`` the claims fence the member (it takes nothing) and ``on_fenced`` runs once, so
the worker can abandon what it was running. On :meth:`Membership.stop` the member stops taking
keys, waits for its in-flight keys to drain, writes an empty view and deletes its Lease: its keys
move at once.

Trace events (when a bus is handed in; names, counts and timings only): ``shard.member_joined``
at the first publish of a view that holds the member, ``shard.view_changed`` when its published
claim or its target changes (view or layout), ``shard.drain_started`` when it must wait for
in-flight keys before it gives up part of its share and ``shard.drain_finished`` when it gave it
up, ``shard.member_fenced`` / ``shard.member_unfenced`` around a stale renew,
``shard.member_left`` on release, ``shard.layout_changed`` when this member wrote a new layout.
The metrics (:mod:`pycm.sharding.metrics`) follow the same points.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from pycm.api.sharding import FIELD_NAMESPACE, HASH_SPACE
from pycm.sharding.claims import Claim, MemberClaims
from pycm.sharding.layout import IDENTITY, Layout, LayoutError
from pycm.sharding.layout_writer import LayoutPlan, LayoutWriter
from pycm.sharding.metrics import ShardingMetrics
from pycm.sharding.wire import (
    KNOTS_ANNOTATION,
    LAYOUT_ANNOTATION,
    RING_LABEL,
    VIEW_ANNOTATION,
    layout_lease,
    layout_lease_name,
    layout_of,
    lease_name,
    member_lease,
    peer_record,
)
from pycm.trace.bus import Bus
from pycm.trace.kinds import (
    ShardDrainFinished,
    ShardDrainStarted,
    ShardLayoutChanged,
    ShardMemberFenced,
    ShardMemberJoined,
    ShardMemberLeft,
    ShardMemberUnfenced,
    ShardViewChanged,
)
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.leasetiming import KUBE_DEFAULTS

# The wire names are pycm.sharding.wire's; re-exported for the tests and tools that read Leases.
__all__ = [
    "KNOTS_ANNOTATION",
    "LAYOUT_ANNOTATION",
    "RING_LABEL",
    "VIEW_ANNOTATION",
    "LeaseStore",
    "Membership",
    "MembershipConfig",
    "layout_lease_name",
    "lease_name",
]

log = logging.getLogger(__name__)


class LeaseStore(Protocol):
    """What a member needs of the API (``pycm.sharding.leases.ClientLeaseStore`` over the
    pycm client; the tests use the emulator through it)."""

    async def write(self, name: str, body: dict[str, Any]) -> None:
        """Create or update (optimistically) this member's Lease."""

    async def read_ring(self, ring: str) -> list[dict[str, Any]]:
        """Every Lease labelled with the ring, read from the server (quorum)."""

    async def delete(self, name: str) -> None:
        """Delete this member's Lease (gone already is fine)."""


@dataclass(frozen=True)
class MembershipConfig:
    ring: str
    identity: str
    lease_duration: float = KUBE_DEFAULTS.lease_duration
    renew_deadline: float = KUBE_DEFAULTS.renew_deadline
    retry_period: float = KUBE_DEFAULTS.retry_period

    def __post_init__(self) -> None:
        if "," in self.identity or not self.identity:
            raise ValueError(f"a member identity is non-empty and has no ',': {self.identity!r}")
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "sharding needs retry period < renew deadline < lease duration, got "
                f"{self.retry_period}s, {self.renew_deadline}s, {self.lease_duration}s"
            )


@dataclass
class _Drain:
    """A drain under way: since when (monotonic), the share it gives up, the most in-flight keys
    of that share seen, and whether ``shard.drain_started`` was emitted (only when it waited)."""

    started: float
    share_dropped: float
    keys: int = 0
    announced: bool = False


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """The length of the intersection of two ordered lists of disjoint ``[start, end)`` spans."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, end - start)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _names(members: Iterable[str]) -> str:
    return ",".join(sorted(members))


class Membership:
    """One member's loop. ``in_flight`` returns the namespace hashes of the keys being
    reconciled, :attr:`in_flight_uids` the uid hashes of uid-sharded ones.
    ``bus`` and ``metrics`` are optional: without them the member reports nothing."""

    def __init__(
        self,
        config: MembershipConfig,
        store: LeaseStore,
        in_flight: Callable[[], Iterable[int]],
        *,
        clock: Clock = REAL_CLOCK,
        on_fenced: Callable[[], None] | None = None,
        bus: Bus | None = None,
        metrics: ShardingMetrics | None = None,
        layouts: LayoutWriter | None = None,
    ) -> None:
        self.config = config
        self.claims = MemberClaims(config.identity, config.lease_duration, config.renew_deadline)
        self._store = store
        # The hashes of the keys being reconciled (replaceable: the sharded member's wiring
        # sets it once its controllers are known).
        self.in_flight = in_flight
        self.in_flight_uids: Callable[[], Iterable[int]] = tuple  # (the layout moves neither)
        self.clock = clock
        self._on_fenced = on_fenced
        self._was_fenced = False
        self.name = lease_name(config.ring, config.identity)
        self.released = asyncio.Event()
        self.layouts = layouts  # None: this member follows layouts but never writes one
        self.layout_name = layout_lease_name(config.ring)
        self._layout_version = ""  # the layout Lease's resourceVersion as last read ("": none)
        self._layout_broken = False  # the layout Lease did not parse (logged once)
        self.bus = bus
        self.metrics = metrics
        self._joined_at: float | None = None
        self._fenced_at: float | None = None
        self._drain: _Drain | None = None
        # The (published, target) last reported in shard.view_changed.
        self._reported: tuple[Claim, Claim] | None = None
        if metrics is not None:
            metrics.watch_member(
                config.ring, config.identity, config.lease_duration, self.drain_age
            )

    def may_take(self, hashed: int, field: str = FIELD_NAMESPACE) -> bool:
        return self.claims.may_take(self.clock.monotonic(), hashed, field)

    def owns(self, hashed: int, field: str = FIELD_NAMESPACE) -> bool:
        return self.claims.owns(self.clock.monotonic(), hashed, field)

    def owner(self, hashed: int, field: str = FIELD_NAMESPACE) -> str | None:
        """Who owns the hash (of ``field``) under the ring of the members this one sees now."""
        claims = self.claims
        return claims.ring(claims.target_claim(self.clock.monotonic()), field).owner(hashed)

    def _body(self, claim: Claim, now_ns: int) -> dict[str, Any]:
        config = self.config
        return member_lease(
            self.name, config.ring, config.identity, config.lease_duration, claim, now_ns
        )

    def _layout_body(self, plan: LayoutPlan) -> dict[str, Any]:
        return layout_lease(self.layout_name, self.config.ring, plan.layout, plan.namespaces)

    def _read_layout(self, leases: list[dict[str, Any]]) -> Layout:
        """The ring's layout as read: identity when there is no layout Lease, and when its Lease
        does not parse (logged once) — every member then agrees on the plain ring, and a writer
        may replace the Lease (its resourceVersion is kept for the update)."""
        lease = next(
            (x for x in leases if (x.get("metadata") or {}).get("name") == self.layout_name), None
        )
        if lease is None:
            self._layout_version = ""
            return IDENTITY
        self._layout_version = str((lease.get("metadata") or {}).get("resourceVersion") or "")
        try:
            layout = layout_of(lease)
        except LayoutError as exc:
            if not self._layout_broken:
                log.warning("sharding: ignoring layout Lease %s: %s", self.layout_name, exc)
            self._layout_broken = True
            return IDENTITY
        self._layout_broken = False
        return layout

    async def _maybe_write_layout(self) -> None:
        """Step 4: a settled member lets its writer replace a clearly unbalanced layout."""
        claims, writer = self.claims, self.layouts
        now = self.clock.monotonic()
        if writer is None or claims.fenced(now) or not claims.published:
            return
        if claims.published_claim != claims.target_claim(now):
            return  # moving: the member set or the layout is changing already
        plan = await writer.plan(claims.published, claims.target_layout, claims.tokens_per_member)
        if plan is None:
            return
        if not await writer.write(self.layout_name, self._layout_body(plan), self._layout_version):
            return
        log.info(
            "sharding: wrote layout %s for ring %s (%d namespaces, %d members: at most %d on "
            "one member, was %d)",
            plan.layout.digest,
            self.config.ring,
            plan.namespaces,
            plan.members,
            plan.most_after,
            plan.most_before,
        )
        if self.bus is not None:
            self.bus.point(
                ShardLayoutChanged(
                    ring=self.config.ring,
                    member=self.config.identity,
                    digest=plan.layout.digest,
                    previous=claims.layout,
                    namespaces=plan.namespaces,
                    knots=len(plan.layout.knots),
                    members=plan.members,
                    most_before=plan.most_before,
                    most_after=plan.most_after,
                )
            )

    async def tick(self) -> None:
        """One period: publish or renew, then read the ring."""
        now = self.clock.monotonic()
        in_flight, in_flight_uids = list(self.in_flight()), list(self.in_flight_uids())
        claim = self.claims.to_publish(now, in_flight, in_flight_uids)
        self._follow_drain(now, claim, in_flight, in_flight_uids)
        written = self.claims.published_claim if claim is None else claim
        try:
            await self._store.write(self.name, self._body(written, self.clock.wall_ns()))
        except Exception as exc:  # the API is down or slow: retried next period
            log.warning("sharding: renewing lease %s failed: %s", self.name, exc)
        else:
            before = self.claims.published
            self.claims.renewed(now, written.view, written.layout)
            if written.view != before:
                self._report_publish(now, written.view)
            if not written.view and claim is not None:  # released (stopping, drained)
                await self._store.delete(self.name)
                self.released.set()
                self._report_left()
                return
            try:
                leases = await self._store.read_ring(self.config.ring)
            except Exception as exc:
                log.warning("sharding: reading ring %s failed: %s", self.config.ring, exc)
            else:
                records = (peer_record(lease) for lease in leases)
                self.claims.observed(
                    self.clock.monotonic(),
                    [r for r in records if r is not None],
                    self._read_layout(leases),
                )
                await self._maybe_write_layout()
        fenced = self.claims.fenced(self.clock.monotonic())
        if fenced and not self._was_fenced and self._on_fenced is not None:
            self._on_fenced()
        if fenced != self._was_fenced:
            self._report_fence(fenced)
        self._was_fenced = fenced
        self._report_view(len(in_flight) + len(in_flight_uids))

    async def run(self) -> None:
        """Tick every ``retry_period`` until released (after :meth:`stop`) or cancelled."""
        while not self.released.is_set():
            await self.tick()
            if self.released.is_set():
                return
            await self.clock.sleep(self.config.retry_period)

    def stop(self) -> None:
        """Begin leaving: take nothing more; :meth:`run` returns once released."""
        self.claims.stop()

    # -- what it reports (trace events and metrics) -----------------------------------------

    def share(self, claim: Claim) -> float:
        """This member's fraction of the hash space under the ring of ``claim``."""
        return self.claims.ring(claim).share(self.config.identity) if claim.view else 0.0

    def drain_age(self) -> float:
        """Seconds the running drain has lasted; 0 when none runs."""
        drain = self._drain
        return 0.0 if drain is None else self.clock.monotonic() - drain.started

    def _follow_drain(
        self, now: float, claim: Claim | None, in_flight: list[int], in_flight_uids: list[int]
    ) -> None:
        """Start (or keep up) the drain when the target gives up part of this member's share
        (a membership change or a new layout)."""
        claims, me = self.claims, self.config.identity
        target, published = claims.target_claim(now), claims.published_claim
        if target == published or me not in published.view:
            self._drain = None  # nothing to give up (or the target came back before the publish)
            return
        drain = self._drain
        if drain is None:
            mine = claims.spans(published)
            kept = claims.spans(target) if me in target.view else []
            dropped = (sum(e - s for s, e in mine) - _overlap(mine, kept)) / HASH_SPACE
            if dropped <= 0:
                return  # it only gains: nothing to drain
            drain = self._drain = _Drain(now, dropped)
        waiting = claims.dropped(target, in_flight, in_flight_uids)
        drain.keys = max(drain.keys, waiting)
        if claim is None and not drain.announced and self.bus is not None:
            drain.announced = True
            self.bus.point(
                ShardDrainStarted(
                    ring=self.config.ring,
                    member=me,
                    keys=waiting,
                    share_dropped=drain.share_dropped,
                )
            )

    def _report_publish(self, now: float, written: frozenset[str]) -> None:
        ring, me = self.config.ring, self.config.identity
        drain, self._drain = self._drain, None
        if drain is not None:
            seconds = now - drain.started
            if self.metrics is not None:
                self.metrics.drains_total.labels(ring).inc()
                self.metrics.drain_duration.labels(ring).observe(seconds)
            if self.bus is not None:
                self.bus.point(
                    ShardDrainFinished(
                        ring=ring,
                        member=me,
                        keys=drain.keys,
                        share_dropped=drain.share_dropped,
                        duration_ms=seconds * 1e3,
                    )
                )
        if me in written and self._joined_at is None:
            self._joined_at = now
            if self.bus is not None:
                self.bus.point(
                    ShardMemberJoined(
                        ring=ring,
                        member=me,
                        view=_names(written),
                        share=self.share(self.claims.published_claim),
                    )
                )

    def _report_left(self) -> None:
        joined, self._joined_at = self._joined_at, None
        if self.metrics is not None:
            self.metrics.share_ratio.labels(self.config.ring, self.config.identity).set(0)
        if self.bus is not None:
            on_ring = 0.0 if joined is None else self.clock.monotonic() - joined
            self.bus.point(
                ShardMemberLeft(
                    ring=self.config.ring, member=self.config.identity, on_ring_s=on_ring
                )
            )

    def _report_fence(self, fenced: bool) -> None:
        """A member that never joined is not reported (its first write has not succeeded)."""
        now = self.clock.monotonic()
        ring, me = self.config.ring, self.config.identity
        if fenced and self._joined_at is not None:
            self._fenced_at = now
            last = self.claims.last_renew
            if self.metrics is not None:
                self.metrics.lease_lost_total.labels(ring).inc()
            if self.bus is not None:
                self.bus.point(
                    ShardMemberFenced(
                        ring=ring,
                        member=me,
                        renew_age_s=-1.0 if last is None else now - last,
                        renew_deadline_s=self.config.renew_deadline,
                    )
                )
        elif not fenced and self._fenced_at is not None:
            since, self._fenced_at = self._fenced_at, None
            if self.bus is not None:
                self.bus.point(ShardMemberUnfenced(ring=ring, member=me, fenced_s=now - since))

    def _report_view(self, keys_in_flight: int) -> None:
        claims = self.claims
        shape = (claims.published_claim, claims.target_claim(self.clock.monotonic()))
        if shape == self._reported or not claims.published:
            return
        before = self._reported[1].view if self._reported is not None else frozenset()
        self._reported = shape
        published, target = shape[0].view, shape[1].view
        ring, me = self.config.ring, self.config.identity
        share = self.share(shape[0])
        if self.metrics is not None:
            self.metrics.members.labels(ring).set(len(target))
            self.metrics.share_ratio.labels(ring, me).set(share)
        if self.bus is not None:
            self.bus.point(
                ShardViewChanged(
                    ring=ring,
                    member=me,
                    view=_names(published),
                    target=_names(target),
                    members=len(target),
                    share=share,
                    target_share=self.share(shape[1]),
                    joined=_names(target - before),
                    left=_names(before - target),
                    keys_in_flight=keys_in_flight,
                )
            )
