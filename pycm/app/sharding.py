"""A sharded member's wiring: its membership Lease, its controllers' key gates, its informers'
share, and the relist when the share changes.

What ``pycm run`` in sharded mode will build once its flags land (issue 42): here as one object
so the parts are tested together, in-process, against the emulator.

- **Join first.** :meth:`ShardedMember.join` publishes this member's Lease and reads the ring
  once, so the informers start with the right share (``shardSelector``) instead of everything.
- **Gates.** Each controller asks :class:`~pycm.sharding.gate.ShardKeyGate` before each key;
  each namespaced informer's list-watch carries the member's share (namespace-hash spans of the
  ring of its published view and of the members it sees now: the keys it drains and the keys it
  will take). Cluster-scoped informers are not sharded: every member caches them.
- **The ring moves.** After each tick, when the published view or the live set changed, the
  selectors are replaced and the sharded informers relist at once (the reflector's ``relist``):
  what left the share leaves the cache, what entered arrives as adds, which queue their keys.
- **Drain.** The membership's in-flight keys are the controllers' keys in processing.
- **Fence.** :meth:`ShardedMember.fence` is a write fence (the client's ``WriteFence``): open
  while this member's own Lease was renewed within the renew deadline.
"""

from __future__ import annotations

from pycm.api.sharding import FIELD_NAMESPACE, HASH_SPACE, ShardSelector
from pycm.cache.listwatch import ClientListWatch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.controller.worker import Controller
from pycm.sharding.claims import Claim
from pycm.sharding.gate import ShardKeyGate
from pycm.sharding.membership import Membership
from pycm.sharding.ring import join_spans
from pycm.trace.kinds import ShardRelisted

__all__ = ["ShardedMember"]


class _Fence:
    """The member's Lease as a write fence: renewed within the renew deadline."""

    def __init__(self, membership: Membership) -> None:
        self._membership = membership
        self.renew_deadline = membership.config.renew_deadline

    def age(self) -> float | None:
        last = self._membership.claims.last_renew
        return None if last is None else self._membership.clock.monotonic() - last

    def is_open(self) -> bool:
        age = self.age()
        return age is not None and age < self.renew_deadline

    async def wait_open(self) -> None:
        """Return once the Lease was renewed within the deadline again (a worker's wait)."""
        membership = self._membership
        while not self.is_open():
            await membership.clock.sleep(membership.config.retry_period / 4)


class ShardedMember:
    def __init__(self, membership: Membership) -> None:
        self.membership = membership
        self.gate = ShardKeyGate(membership, caches_current=self.caches_current)
        self.fence = _Fence(membership)
        self._controllers: list[Controller] = []
        self._sharded: list[tuple[SharedIndexInformer, ClientListWatch]] = []
        self._shape: tuple[Claim, Claim] | None = None
        # The sharded informers relisting for the current share: each one's syncs_started when
        # its selector changed (pycm.cache.reflector); empty once every one synced after it.
        self._relisting: dict[SharedIndexInformer, int] = {}
        # For an informer whose relist is in its FIFO: how many deltas its processing must have
        # applied to the indexer (what the controllers read) before its keys are taken.
        self._applying: dict[SharedIndexInformer, int] = {}
        membership.in_flight = self.in_flight
        if membership.metrics is not None:  # the membership's bus and metrics report for both
            config = membership.config
            membership.metrics.watch_keys(config.ring, config.identity, self.objects_cached)

    # -- wiring ---------------------------------------------------------------------------------

    def add_controller(self, controller: Controller) -> None:
        controller.key_gate = self.gate
        self._controllers.append(controller)

    def add_informer(self, informer: SharedIndexInformer) -> bool:
        """Shard ``informer`` if its resource is namespaced; True if it was."""
        lw = informer.reflector.list_watch
        resource = getattr(lw, "resource", None)
        if not isinstance(lw, ClientListWatch) or not getattr(resource, "namespaced", False):
            return False
        lw.shard_selector = self.selector()
        self._sharded.append((informer, lw))
        return True

    def in_flight(self) -> list[int]:
        keys: list[str] = []
        for controller in self._controllers:
            keys.extend(controller.queue.processing_items())
        return self.gate.hashes(keys)

    def objects_cached(self) -> int:
        """What the sharded informers hold (the keys of this member's share, and while it
        drains, of the share it gives up)."""
        return sum(len(informer.indexer) for informer, _ in self._sharded)

    def selector(self) -> ShardSelector | None:
        """This member's share of namespaces: its spans in the ring of its published view and
        in the ring of the members it sees live now (None before it has joined)."""
        claims = self.membership.claims
        now = self.membership.clock.monotonic()
        spans: list[tuple[int, int]] = []
        for claim in {claims.published_claim, claims.target_claim(now)}:  # view and layout
            spans.extend(claims.spans(claim))
        if not spans:
            return None
        return ShardSelector.of(FIELD_NAMESPACE, join_spans(spans))

    # -- running --------------------------------------------------------------------------------

    async def join(self) -> None:
        """Publish this member's Lease and read the ring once (before the informers start)."""
        await self.membership.tick()
        self._shape = self._current_shape()

    async def run(self) -> None:
        """Tick every retry period; on a changed ring, new selectors and relists. Returns once
        the member has left (after :meth:`stop`)."""
        membership = self.membership
        while not membership.released.is_set():
            await membership.tick()
            self.reshard_if_moved()
            if membership.released.is_set():
                return
            await membership.clock.sleep(membership.config.retry_period)

    def reshard_if_moved(self) -> bool:
        shape = self._current_shape()
        if shape == self._shape:
            return False
        self._shape = shape
        selector = self.selector()
        cached = self.objects_cached()
        for informer, lw in self._sharded:
            if selector is not None:
                lw.shard_selector = selector
                self._relisting[informer] = informer.reflector.syncs_started
                self._applying.pop(informer, None)
                informer.reflector.relist("shard changed")
        bus = self.membership.bus
        if bus is not None and selector is not None and self._sharded:
            spans = [(r.start, r.end) for r in selector.ranges]
            bus.point(
                ShardRelisted(
                    ring=self.membership.config.ring,
                    member=self.membership.config.identity,
                    informers=len(self._sharded),
                    share=sum(end - start for start, end in spans) / HASH_SPACE,
                    spans=len(spans),
                    objects_cached=cached,
                    resources=",".join(sorted({i.resource for i, _ in self._sharded})),
                )
            )
        return True

    def caches_current(self) -> bool:
        """Whether every sharded informer has synced since the share last changed: a relist
        begun after the change, with the new selector, is in its FIFO and applied to its
        indexer (the reflector's sync fills the FIFO; the informer's loop applies it)."""
        relisting = self._relisting
        if relisting:
            for informer, mark in list(relisting.items()):
                if informer.reflector.synced_through <= mark:
                    continue
                target = self._applying.setdefault(informer, informer.fifo.enqueued)
                if informer.fifo.processed(target):
                    del relisting[informer]
                    del self._applying[informer]
        return not relisting

    def stop(self) -> None:
        self.membership.stop()

    def _current_shape(self) -> tuple[Claim, Claim]:
        """The published and target claims: views and layouts (a new layout moves keys too)."""
        claims = self.membership.claims
        return claims.published_claim, claims.target_claim(self.membership.clock.monotonic())
