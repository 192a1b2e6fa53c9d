"""A member's Lease: renew it with the member's view, read the ring's Leases, follow the claims.

Every ``retry_period`` the member:

1. asks :class:`~pycm.sharding.claims.MemberClaims` which view to publish (the new one once the
   keys it would drop are drained, else the one it holds);
2. writes its own Lease (``coordination.k8s.io/v1``, named ``<ring>-<identity>``, labelled
   ``sharding.pycm.io/ring=<ring>``): ``holderIdentity`` and the renew fields as a leader lease
   (so ``kubectl get leases`` reads it), the view in the annotation ``sharding.pycm.io/view``;
3. then lists the ring's Leases from the API server itself (``resourceVersion`` unset: a quorum
   read, never a cache — the claims' first rule) and hands them to the claims.

A write that fails is retried at the next period; when the last success is older than
``renew_deadline`` the claims fence the member (it takes nothing) and ``on_fenced`` runs once, so
the worker can abandon what it was running. On :meth:`Membership.stop` the member stops taking
keys, waits for its in-flight keys to drain, writes an empty view and deletes its Lease: its keys
move at once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from pycm.sharding.claims import MemberClaims, PeerRecord
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.leasetiming import KUBE_DEFAULTS

__all__ = [
    "RING_LABEL",
    "VIEW_ANNOTATION",
    "LeaseStore",
    "Membership",
    "MembershipConfig",
    "lease_name",
]

log = logging.getLogger(__name__)

RING_LABEL: Final = "sharding.pycm.io/ring"
VIEW_ANNOTATION: Final = "sharding.pycm.io/view"
_NAME_OK = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def lease_name(ring: str, identity: str) -> str:
    """``<ring>-<identity>`` as a DNS-1123 label: an identity with other characters (KCM's are
    ``<host>_<uuid>``) is lower-cased, its other characters become ``-`` and a short hash of it
    is added, so that two identities never share a Lease."""
    name = f"{ring}-{identity}"
    if _NAME_OK.match(name) and len(name) <= 63:
        return name
    digest = hashlib.sha256(identity.encode()).hexdigest()[:8]
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[: 63 - 9].strip("-")
    return f"{cleaned}-{digest}"


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


def _record(lease: dict[str, Any]) -> PeerRecord | None:
    meta = lease.get("metadata") or {}
    holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
    if not holder:
        return None
    view = str((meta.get("annotations") or {}).get(VIEW_ANNOTATION) or "")
    members = frozenset(m for m in view.split(",") if m)
    return PeerRecord(holder, members, str(meta.get("resourceVersion") or ""))


class Membership:
    """One member's loop. ``in_flight`` returns the hashes of the keys being reconciled."""

    def __init__(
        self,
        config: MembershipConfig,
        store: LeaseStore,
        in_flight: Callable[[], Iterable[int]],
        *,
        clock: Clock = REAL_CLOCK,
        on_fenced: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self.claims = MemberClaims(config.identity, config.lease_duration, config.renew_deadline)
        self._store = store
        # The hashes of the keys being reconciled (replaceable: the sharded member's wiring
        # sets it once its controllers are known).
        self.in_flight = in_flight
        self.clock = clock
        self._on_fenced = on_fenced
        self._was_fenced = False
        self.name = lease_name(config.ring, config.identity)
        self.released = asyncio.Event()

    def may_take(self, hashed: int) -> bool:
        return self.claims.may_take(self.clock.monotonic(), hashed)

    def owns(self, hashed: int) -> bool:
        return self.claims.owns(self.clock.monotonic(), hashed)

    def owner(self, hashed: int) -> str | None:
        """Who owns the hash under the ring of the members this one sees live now."""
        claims = self.claims
        return claims.ring(claims.target(self.clock.monotonic())).owner(hashed)

    def _body(self, view: frozenset[str], now_ns: int) -> dict[str, Any]:
        stamp = _micro_time(now_ns)
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "labels": {RING_LABEL: self.config.ring},
                "annotations": {VIEW_ANNOTATION: ",".join(sorted(view))},
            },
            "spec": {
                "holderIdentity": self.config.identity if view else "",
                "leaseDurationSeconds": round(self.config.lease_duration),
                "renewTime": stamp,
            },
        }

    async def tick(self) -> None:
        """One period: publish or renew, then read the ring."""
        now = self.clock.monotonic()
        view = self.claims.view_to_publish(now, self.in_flight())
        written = self.claims.published if view is None else view
        try:
            await self._store.write(self.name, self._body(written, self.clock.wall_ns()))
        except Exception as exc:  # the API is down or slow: retried next period
            log.warning("sharding: renewing lease %s failed: %s", self.name, exc)
        else:
            self.claims.renewed(now, written)
            if not written and view is not None:  # released (stopping, drained)
                await self._store.delete(self.name)
                self.released.set()
                return
            try:
                leases = await self._store.read_ring(self.config.ring)
            except Exception as exc:
                log.warning("sharding: reading ring %s failed: %s", self.config.ring, exc)
            else:
                records = (_record(lease) for lease in leases)
                self.claims.observed(self.clock.monotonic(), [r for r in records if r is not None])
        fenced = self.claims.fenced(self.clock.monotonic())
        if fenced and not self._was_fenced and self._on_fenced is not None:
            self._on_fenced()
        self._was_fenced = fenced

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


def _micro_time(ns: int) -> str:
    moment = dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
