"""Never two owners: when a member may take a key, as a pure state machine.

Each member holds one Lease. Besides the renew fields of leader election it publishes its
*view* — the member set whose ring it has adopted — and the digest of the *layout* that ring
uses (:mod:`pycm.sharding.layout`: where namespace hashes sit between the tokens). A member's
**claim** is its share of the ring of its published view and layout. The rules:

1. **Publish, then read.** A member adopts a new view by writing it to its Lease, and judges the
   others only by a read made after that write (a quorum read: ``resourceVersion=""``, never a
   cache). Of two members that both want a key, the one that read second sees the other's claim.
2. **Take only what is yours and no one else's.** A member takes a key only if the key is in its
   own claim, is its own under the ring of the members it sees live now (its *target*), and is
   in no other live member's claim.
3. **Drain before you let go.** When its target changes, a member stops taking the keys it no
   longer owns at once, and publishes the new view only when none of those keys is in flight.
   So a claim is dropped only after the last reconcile of the dropped keys has finished.
4. **A silent member's claim dies with its lease.** Another member's claim counts while its
   Lease is live: changed within ``lease_duration`` of the observer's own clock, as client-go's
   elector judges a leader (never by the writer's timestamps). A member that cannot renew its
   own Lease within ``renew_deadline`` takes nothing (``renew_deadline < lease_duration``, the
   leader-election bound: it has stopped before anyone else can see it gone).
5. **Leaving is a release.** A member that stops stops taking keys, drains, and then publishes
   an empty view (or deletes its Lease): its keys move at once, without waiting out a lease.

A new layout (read from the ring's shared layout Lease) is adopted exactly like a new member
set: it is part of the target, so rules 1–3 hold unchanged. The layout places namespace hashes
only: keys sharded by uid (hashes that spread evenly) sit on the plain ring of the same view, so
the judgements take the field a key's hash is of. A peer whose layout this member
does not know (written and replaced between two of its reads) is taken to claim everything
until it moves on: this member waits, which is safe.

From 1–3, two live members never both hold a key: each took it after reading the other's
latest claim, and claims only shrink after draining. From 4, a dead member's keys move after
``lease_duration``, when the dead member has stopped by its own deadline. The table tests in
``tests/sharding/test_claims.py`` walk joins, leaves, pauses and partitions on a fake clock.

This module decides; it does no I/O. The member's runner writes and reads the Leases, and the
worker asks :meth:`MemberClaims.may_take` before each key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pycm.api.sharding import FIELD_NAMESPACE, FIELD_UID
from pycm.sharding.layout import IDENTITY, Layout
from pycm.sharding.ring import Ring

__all__ = ["Claim", "MemberClaims", "PeerRecord"]

_KNOWN_LAYOUTS = 8
"""Layouts remembered besides the ones in use: layouts change rarely (the writer's hysteresis),
and a peer on a forgotten one only makes this member wait until it moves on."""


@dataclass(frozen=True, slots=True)
class Claim:
    """A view and the digest of the layout its ring uses ("" is the identity layout)."""

    view: frozenset[str]
    layout: str = ""


@dataclass(frozen=True, slots=True)
class PeerRecord:
    """What one member's Lease says, as read: its identity, its published view, a token that
    changes on every write (the resourceVersion) so that renewals can be told apart, and the
    digest of the layout of its claim."""

    identity: str
    view: frozenset[str]
    version: str
    layout: str = ""


@dataclass
class _Observed:
    record: PeerRecord
    observed_at: float  # this member's monotonic clock when the record last changed


@dataclass
class MemberClaims:
    """One member's rules. ``now`` is this member's monotonic clock, in seconds."""

    identity: str
    lease_duration: float
    renew_deadline: float
    tokens_per_member: int = 64
    published: frozenset[str] = frozenset()
    """The view written to this member's Lease (empty: it claims nothing)."""
    published_layout: str = ""
    """The digest of the layout written beside it (always one of ``_layouts``)."""
    layout: str = ""
    """The digest of the layout of the target: the latest read from the ring's layout Lease."""
    last_renew: float | None = None
    """When this member's own Lease write last succeeded."""
    _peers: dict[str, _Observed] = field(default_factory=dict)
    _read_after_publish: bool = False
    _rings: dict[Claim, Ring] = field(default_factory=dict)
    # The layouts this member knows, by digest, oldest first; the identity layout always.
    _layouts: dict[str, Layout] = field(default_factory=lambda: {"": IDENTITY})
    _stopping: bool = False

    # -- inputs ------------------------------------------------------------------------------

    def renewed(self, now: float, view: frozenset[str], layout: str | None = None) -> None:
        """This member's Lease was written with ``view`` and ``layout`` (a renew, or the publish
        of a new claim); ``layout`` None keeps the published one."""
        layout = self.published_layout if layout is None else layout
        if layout not in self._layouts:
            raise ValueError(f"published a layout this member does not know: {layout!r}")
        if view != self.published or layout != self.published_layout:
            self._read_after_publish = False  # rule 1: the others must be read again
        self.published = view
        self.published_layout = layout
        self.last_renew = now

    def observed(
        self, now: float, records: Iterable[PeerRecord], layout: Layout | None = None
    ) -> None:
        """A quorum read of every member's Lease (this member's own included, or not) and, when
        given, of the ring's layout (:data:`~pycm.sharding.layout.IDENTITY` when there is none;
        None: not read, the target keeps its layout)."""
        if layout is not None:
            self.learn(layout)
            self.layout = layout.digest
        seen: set[str] = set()
        for record in records:
            if record.identity == self.identity:
                continue
            seen.add(record.identity)
            known = self._peers.get(record.identity)
            if known is None or known.record.version != record.version:
                self._peers[record.identity] = _Observed(record, now)
        for gone in set(self._peers) - seen:  # a deleted Lease: released
            del self._peers[gone]
        self._read_after_publish = True

    def learn(self, layout: Layout) -> None:
        """Remember ``layout`` (so peers that claim under it can be judged)."""
        known = self._layouts
        known[layout.digest] = known.pop(layout.digest, layout)  # the newest last
        in_use = {"", self.layout, self.published_layout, layout.digest}
        for digest in list(known):
            if len(known) <= _KNOWN_LAYOUTS + len(in_use):
                break
            if digest not in in_use:
                del known[digest]

    def stop(self) -> None:
        """Rule 5: take nothing from now on; :meth:`view_to_publish` turns empty once drained."""
        self._stopping = True

    # -- judgements --------------------------------------------------------------------------

    def live_peers(self, now: float) -> Mapping[str, PeerRecord]:
        """The other members whose Leases are live and not released, by this member's clock."""
        return {
            name: seen.record
            for name, seen in self._peers.items()
            if seen.record.view and now < seen.observed_at + self.lease_duration
        }

    def target(self, now: float) -> frozenset[str]:
        """The view this member should hold: itself (unless stopping) and the live others. A
        member that joins writes its Lease with a view that includes itself, so an empty view
        only ever means "released"."""
        members = set(self.live_peers(now))
        if not self._stopping:
            members.add(self.identity)
        return frozenset(members)

    def fenced(self, now: float) -> bool:
        """Rule 4, for this member: its own Lease is older than ``renew_deadline``."""
        return self.last_renew is None or now >= self.last_renew + self.renew_deadline

    @property
    def published_claim(self) -> Claim:
        return Claim(self.published, self.published_layout)

    def target_claim(self, now: float) -> Claim:
        """The claim this member should hold: its target view under the latest layout."""
        return Claim(self.target(now), self.layout)

    @property
    def target_layout(self) -> Layout:
        """The layout of the target (the latest read)."""
        return self._layouts[self.layout]

    def ring(self, claim: Claim, field: str = FIELD_NAMESPACE) -> Ring:
        """The ring of a claim whose layout this member knows (its own claims' always are), for
        hashes of ``field``: namespaces are placed by the layout, anything else plainly."""
        ring = self._ring(claim, field)
        if ring is None:
            raise KeyError(f"unknown layout {claim.layout!r}")
        return ring

    def _ring(self, claim: Claim, field: str = FIELD_NAMESPACE) -> Ring | None:
        if field != FIELD_NAMESPACE:
            claim = Claim(claim.view)
        ring = self._rings.get(claim)
        if ring is None:
            layout = self._layouts.get(claim.layout)
            if layout is None:
                return None
            if len(self._rings) > 8:  # claims change rarely; keep the last few rings
                self._rings.clear()
            ring = self._rings[claim] = Ring(claim.view, self.tokens_per_member, layout)
        return ring

    def spans(self, claim: Claim, field: str = FIELD_NAMESPACE) -> list[tuple[int, int]]:
        """This member's spans of ``field``'s hashes under ``claim`` (none when it is not in the
        view)."""
        return self.ring(claim, field).spans(self.identity)

    def owns(self, now: float, hashed: int, field: str = FIELD_NAMESPACE) -> bool:
        """Whether the key is this member's under its target ring (whether to keep it queued)."""
        return self.ring(self.target_claim(now), field).owner(hashed) == self.identity

    def may_take(self, now: float, hashed: int, field: str = FIELD_NAMESPACE) -> bool:
        """Rules 1, 2 and 4: whether this member may start a reconcile of this key (the hash of
        its ``field``) now."""
        if self._stopping or self.fenced(now) or not self._read_after_publish:
            return False
        if self.ring(self.published_claim, field).owner(hashed) != self.identity:
            return False
        if not self.owns(now, hashed, field):
            return False
        for name, record in self.live_peers(now).items():
            ring = self._ring(Claim(record.view, record.layout), field)
            if ring is None:
                return False  # a layout this member does not know: it may claim anything
            if ring.owner(hashed) == name:
                return False  # still claimed by a live other: wait for its drain or its lease
        return True

    def to_publish(
        self, now: float, in_flight: Iterable[int], in_flight_uids: Iterable[int] = ()
    ) -> Claim | None:
        """Rule 3 (and 5): the claim to write now, or None to keep the published one.

        ``in_flight`` are the namespace hashes of the keys whose reconciles are running,
        ``in_flight_uids`` the uid hashes of uid-sharded ones. The new claim is due once no
        running key is one this member would drop by adopting it. A member that leaves
        publishes an empty view."""
        target = self.target_claim(now)
        if target == self.published_claim:
            return None
        if self.dropped(target, in_flight, in_flight_uids):
            return None  # still draining a key that would be dropped
        return target if self.identity in target.view else Claim(frozenset(), target.layout)

    def dropped(
        self, claim: Claim, in_flight: Iterable[int], in_flight_uids: Iterable[int] = ()
    ) -> int:
        """How many of the running keys (namespace hashes, uid hashes) ``claim`` would drop."""
        if self.identity not in claim.view:
            return sum(1 for _ in in_flight) + sum(1 for _ in in_flight_uids)
        laid, plain = self.ring(claim), self.ring(claim, FIELD_UID)
        me = self.identity
        return sum(1 for h in in_flight if laid.owner(h) != me) + sum(
            1 for h in in_flight_uids if plain.owner(h) != me
        )
