"""A sharded member's wiring: its membership Lease, its controllers' key gates, its informers'
share, and the relist when the share changes.

What ``pycm run --sharded`` builds (pycm.app.membership, pycm.app.startcontrollers), as one
object so that the parts are tested together, in-process, against the emulator.

- **Join first.** :meth:`ShardedMember.join` publishes this member's Lease and reads the ring
  once, so the informers start with the right share (``shardSelector``) instead of everything.
- **Gates.** Each controller asks a :class:`~pycm.sharding.gate.ShardKeyGate` before each key.
  A namespace-sharded controller's gate hashes the key's namespace, and each namespaced informer
  of its context carries the member's share of namespaces (namespace-hash spans of the ring of
  its published view and of the members it sees now: the keys it drains and the keys it will
  take); cluster-scoped informers are not sharded there: every member caches them. A
  uid-sharded controller's gate hashes the uid of the key's object in its primary informer (the
  ``for_`` resource's), and only the primary informers carry a share, over uids (cluster-scoped
  ones too): a secondary object's uid says nothing of its owner's, so the other informers of
  that context cache everything.
- **Keys and objects.** The keys of this member's share are the objects its sharded primary
  informers cache (:meth:`ShardedMember.keys_cached`); the objects, what all its sharded
  informers cache (:meth:`ShardedMember.objects_cached`). Both count, during a drain, the share
  given up too.
- **The ring moves.** After each tick, when the published view or the live set changed, the
  selectors are replaced and the sharded informers relist at once (the reflector's ``relist``):
  what left the share leaves the cache, what entered arrives as adds, which queue their keys.
- **Drain.** The membership's in-flight keys are the controllers' keys in processing.
- **Fence.** :meth:`ShardedMember.fence` is a write fence (the client's ``WriteFence``): open
  while this member's own Lease was renewed within the renew deadline.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pycm.api.sharding import FIELD_NAMESPACE, FIELD_UID, HASH_SPACE, ShardSelector
from pycm.cache.listwatch import ClientListWatch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.controller.worker import Controller
from pycm.sharding.claims import Claim
from pycm.sharding.gate import ShardKeyGate
from pycm.sharding.membership import Membership
from pycm.sharding.ring import join_spans
from pycm.trace.kinds import ShardRelisted
from pycm.util.malloc import release_free_memory

__all__ = ["ShardedMember", "uid_in"]

_FIELDS = (FIELD_NAMESPACE, FIELD_UID)
# Retry periods a starting member waits at most for the ring it sees to hold (settle()).
SETTLE_PERIODS = 3


# How many deleted keys' uids a uid-sharded gate remembers (the delete's reconcile comes soon
# after the delete; a key forgotten meanwhile is dropped, as one never cached).
GONE_UIDS = 4096


def _uid_of(obj: Any) -> str:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    return str(metadata.get("uid") or "") if isinstance(metadata, dict) else ""


def uid_in(informer: SharedIndexInformer) -> Callable[[str], str | None]:
    """A key's shard value under uid sharding: the uid of its object in ``informer``'s cache,
    else of the object that last left it under that key (a deletion: the delete's reconcile
    is the owner's, as under namespace sharding; or a move out of this member's share: the
    ring then names the new owner); None for a key never cached here."""
    indexer = informer.indexer
    gone: OrderedDict[str, str] = OrderedDict()

    def removed(key: str, last: Any) -> None:
        gone[key] = _uid_of(last)
        gone.move_to_end(key)
        if len(gone) > GONE_UIDS:
            gone.popitem(last=False)

    informer.removal_hooks.append(removed)

    def uid(key: str) -> str | None:
        obj = indexer.get_by_key(key)
        if obj is None:
            return gone.get(key)
        return _uid_of(obj)

    return uid


@dataclass(frozen=True, slots=True)
class _Sharded:
    """One informer caching this member's share: of ``field``'s hash (the selector it lists and
    watches with); ``keys``: a primary informer, whose objects are the controllers' keys."""

    informer: SharedIndexInformer
    list_watch: ClientListWatch
    field: str
    keys: bool


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
        # The namespace-sharded controllers' gate (one for all: a key's namespace is in it).
        self.gate = ShardKeyGate(membership, caches_current=self.caches_current)
        self.fence = _Fence(membership)
        # Each controller's gate: self.gate, or a uid-sharded one's own (it reads its cache).
        self._gates: dict[Controller, ShardKeyGate] = {}
        self._sharded: list[_Sharded] = []
        self._shape: tuple[Claim, Claim] | None = None
        # The sharded informers relisting for the current share: each one's syncs_started when
        # its selector changed (pycm.cache.reflector); empty once every one synced after it.
        self._relisting: dict[SharedIndexInformer, int] = {}
        # For an informer whose relist is in its FIFO: how many deltas its processing must have
        # applied to the indexer (what the controllers read) before its keys are taken.
        self._applying: dict[SharedIndexInformer, int] = {}
        membership.in_flight = self.in_flight
        membership.in_flight_uids = functools.partial(self.in_flight, FIELD_UID)
        if membership.metrics is not None:  # the membership's bus and metrics report for both
            config = membership.config
            membership.metrics.watch_keys(
                config.ring, config.identity, self.keys_cached, self.objects_cached
            )

    # -- wiring ---------------------------------------------------------------------------------

    def add_controller(self, controller: Controller, field: str = FIELD_NAMESPACE) -> None:
        """Gate ``controller``'s keys by the hash of ``field`` (a uid-sharded controller needs
        its primary informer: a ControllerBuilder-built one)."""
        if field == FIELD_UID:
            if controller.primary is None:
                raise ValueError(
                    f"controller {controller.name!r}: uid sharding needs the cache of the "
                    "objects its keys name (build it with ControllerBuilder.for_)"
                )
            gate = ShardKeyGate(
                self.membership,
                shard_value=uid_in(controller.primary),
                caches_current=self.caches_current,
                field=FIELD_UID,
            )
        else:
            _check_field(field)
            gate = self.gate
        controller.key_gate = gate
        self._gates[controller] = gate

    def add_informer(
        self, informer: SharedIndexInformer, field: str = FIELD_NAMESPACE, *, keys: bool = False
    ) -> bool:
        """Shard ``informer`` over ``field``'s hash; True if it was (namespace sharding leaves
        cluster-scoped resources whole: every member caches them). ``keys``: its objects are
        the keys of sharded controllers (their primary informer)."""
        _check_field(field)
        lw = informer.reflector.list_watch
        if not isinstance(lw, ClientListWatch):
            return False
        if any(s.informer is informer for s in self._sharded):
            return True  # (added already: a late controller's start shards the new ones)
        if field == FIELD_NAMESPACE and not getattr(lw.resource, "namespaced", False):
            return False
        lw.shard_selector = self.selector(field)
        self._sharded.append(_Sharded(informer, lw, field, keys))
        return True

    def in_flight(self, field: str = FIELD_NAMESPACE) -> list[int]:
        """The hashes of ``field`` of the keys in processing (the layout moves namespaces only,
        so the membership's drain tells them apart)."""
        hashes: list[int] = []
        for controller, gate in self._gates.items():
            if gate.field == field:
                hashes.extend(gate.hashes(controller.queue.processing_items()))
        return hashes

    def objects_cached(self) -> int:
        """What the sharded informers hold (this member's share of their objects, and while it
        drains, of the share it gives up)."""
        return sum(len(s.informer.indexer) for s in self._sharded)

    def keys_cached(self) -> int:
        """The keys of this member's share: the objects its sharded primary informers hold
        (each once, however many controllers reconcile them; while it drains, the keys it
        gives up too)."""
        return sum(len(s.informer.indexer) for s in self._sharded if s.keys)

    def selector(self, field: str = FIELD_NAMESPACE) -> ShardSelector | None:
        """This member's share of ``field``'s hashes: its spans in the ring of its published
        view and in the ring of the members it sees live now (None before it has joined)."""
        claims = self.membership.claims
        now = self.membership.clock.monotonic()
        spans: list[tuple[int, int]] = []
        for claim in {claims.published_claim, claims.target_claim(now)}:  # view and layout
            spans.extend(claims.spans(claim, field))
        if not spans:
            return None
        return ShardSelector.of(field, join_spans(spans))

    # -- running --------------------------------------------------------------------------------

    async def join(self) -> None:
        """Publish this member's Lease and read the ring once (before the informers start)."""
        await self.membership.tick()
        self._shape = self._current_shape()

    async def settle(self, most: int = SETTLE_PERIODS) -> int:
        """Read the ring again each retry period until the members it sees held for one (at
        most ``most`` periods); the periods waited. Before the informers start: members that
        start together each see only the ones that wrote their Lease first, and a member that
        lists a share larger than its own keeps that memory (the heap's high-water mark)."""
        membership = self.membership
        clock = membership.clock
        for waited in range(1, most + 1):
            before = self._current_shape()[1]
            await clock.sleep(membership.config.retry_period)
            await membership.tick()
            if self._current_shape()[1] == before:
                self._shape = self._current_shape()
                return waited
        self._shape = self._current_shape()
        return most

    async def run(self) -> None:
        """Tick every retry period; on a changed ring, new selectors and relists. Returns once
        the member has left (after :meth:`stop`)."""
        membership = self.membership
        while not membership.released.is_set():
            await membership.tick()
            self.reshard_if_moved()
            self.caches_current()  # (also asked before each key; here when no key comes)
            if membership.released.is_set():
                return
            await membership.clock.sleep(membership.config.retry_period)

    def reshard_if_moved(self) -> bool:
        shape = self._current_shape()
        if shape == self._shape:
            return False
        self._shape = shape
        selectors = {field: self.selector(field) for field in {s.field for s in self._sharded}}
        objects, keys = self.objects_cached(), self.keys_cached()
        for sharded in self._sharded:
            selector = selectors[sharded.field]
            if selector is not None:
                sharded.list_watch.shard_selector = selector
                informer = sharded.informer
                self._relisting[informer] = informer.reflector.syncs_started
                self._applying.pop(informer, None)
                informer.reflector.relist("shard changed")
        bus = self.membership.bus
        selector = next((s for s in selectors.values() if s is not None), None)
        if bus is not None and selector is not None:
            spans = [(r.start, r.end) for r in selector.ranges]  # the same for every field
            bus.point(
                ShardRelisted(
                    ring=self.membership.config.ring,
                    member=self.membership.config.identity,
                    informers=len(self._sharded),
                    share=sum(end - start for start, end in spans) / HASH_SPACE,
                    spans=len(spans),
                    objects_cached=objects,
                    resources=_names(self._sharded),
                    keys_cached=keys,
                    key_resources=_names(s for s in self._sharded if s.keys),
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
            if not relisting:
                # What left the share has left the caches: give the heap's freed pages back,
                # else a member keeps the high-water mark of its first, larger share (a member
                # alone on the ring at its start lists everything) and memory never divides.
                release_free_memory()
        return not relisting

    def stop(self) -> None:
        self.membership.stop()

    def _current_shape(self) -> tuple[Claim, Claim]:
        """The published and target claims: views and layouts (a new layout moves keys too)."""
        claims = self.membership.claims
        return claims.published_claim, claims.target_claim(self.membership.clock.monotonic())


def _check_field(field: str) -> None:
    if field not in _FIELDS:
        raise ValueError(f"unsupported shard field {field!r}; supported: {', '.join(_FIELDS)}")


def _names(sharded: Iterable[_Sharded]) -> str:
    """The informers' resources, comma-separated, each once."""
    return ",".join(sorted({s.informer.resource for s in sharded}))
