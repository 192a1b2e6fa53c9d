"""LeaseCandidate: client-go's ``tools/leaderelection/leasecandidate.go`` (KEP-4355).

A coordinated elector (``LeaderElectionConfig.coordinated``) never takes a Lease itself: it
publishes a ``coordination.k8s.io/v1beta1`` LeaseCandidate — the Lease it wants, its binary
and emulation versions and the strategy (``OldestEmulationVersion``) — and the API server's
coordinator writes the chosen candidate into the Lease. This module keeps that object alive:

- at start, and every ``renew_interval`` (client-go's requeueInterval, 5 minutes): get; not
  found → create it with ``renewTime`` = now; found → update ``renewTime`` = now and clear
  ``pingTime``;
- in between it watches its own object (field selector ``metadata.name``); an event whose
  ``pingTime`` is set (the coordinator asking "still there?") renews at once, which clears the
  ping (so the renewal's own event does not renew again);
- an API error is logged and retried after a backoff (0.5 s doubling up to 30 s, as the
  rate-limited queue client-go uses, in the small); the watch is re-opened after each end.

Every renewal is a :class:`~pycm.trace.kinds.LeaseCandidateRenewed` event (``pinged`` tells
an answer from a routine renewal), so the TUI and the dashboard can show the candidates.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any

from pycm.kube import Client
from pycm.kube.errors import NotFound
from pycm.kube.resources import Resource
from pycm.leaderelection.record import format_micro_time
from pycm.trace.bus import Bus, default_bus
from pycm.trace.context import error_text
from pycm.trace.kinds import LeaseCandidateRenewed
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["LEASE_CANDIDATES", "OLDEST_EMULATION_VERSION", "LeaseCandidate", "kube_version"]

log = logging.getLogger(__name__)

LEASE_CANDIDATES = Resource(
    "coordination.k8s.io", "v1beta1", "leasecandidates", "LeaseCandidate", True
)
OLDEST_EMULATION_VERSION = "OldestEmulationVersion"

RENEW_INTERVAL = 300.0  # client-go's requeueInterval
_BACKOFF_INITIAL = 0.5
_BACKOFF_CAP = 30.0


def kube_version(major_minor: tuple[int, int]) -> str:
    """A version as KCM publishes it: ``FinalizeVersion`` of major.minor, e.g. ``1.36.0``."""
    return f"{major_minor[0]}.{major_minor[1]}.0"


class LeaseCandidate:
    """Publishes and renews one LeaseCandidate (see the module). ``await run()`` until
    cancelled; ``renewals`` counts the renewals done (tests)."""

    def __init__(
        self,
        client: Client,
        namespace: str,
        name: str,
        lease_name: str,
        binary_version: str,
        emulation_version: str,
        strategy: str = OLDEST_EMULATION_VERSION,
        *,
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        renew_interval: float = RENEW_INTERVAL,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.lease_name = lease_name
        self.binary_version = binary_version
        self.emulation_version = emulation_version
        self.strategy = strategy
        self._clock = clock
        self._bus = bus or default_bus()
        self._renew_interval = renew_interval
        self.renewals = 0

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def _now(self) -> str | None:
        return format_micro_time(self._clock.wall_ns())

    async def ensure(self, *, pinged: bool = False) -> dict[str, Any]:
        """Create the candidate, or renew it (renewTime = now, pingTime cleared)."""
        try:
            current = await self._client.get(LEASE_CANDIDATES, self.name, namespace=self.namespace)
        except NotFound:
            body = {
                "apiVersion": LEASE_CANDIDATES.api_version,
                "kind": LEASE_CANDIDATES.kind,
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {
                    "leaseName": self.lease_name,
                    "binaryVersion": self.binary_version,
                    "emulationVersion": self.emulation_version,
                    "strategy": self.strategy,
                    "renewTime": self._now(),
                },
            }
            made = await self._client.create(LEASE_CANDIDATES, body, namespace=self.namespace)
            log.info("created lease candidate %s for lease %s", self.describe(), self.lease_name)
            self._renewed(pinged=False)
            return made
        spec = {**(current.get("spec") or {}), "renewTime": self._now()}
        spec.pop("pingTime", None)
        updated = await self._client.update(
            LEASE_CANDIDATES, {**current, "spec": spec}, namespace=self.namespace
        )
        self._renewed(pinged=pinged)
        return updated

    def _renewed(self, *, pinged: bool) -> None:
        self.renewals += 1
        self._bus.point(
            LeaseCandidateRenewed(
                candidate=self.describe(),
                lease=f"{self.namespace}/{self.lease_name}",
                binary_version=self.binary_version,
                emulation_version=self.emulation_version,
                strategy=self.strategy,
                pinged=pinged,
            )
        )

    async def run(self) -> None:
        """Keep the candidate alive until cancelled (see the module)."""
        backoff = _BACKOFF_INITIAL
        while True:
            try:
                obj = await self.ensure()
                await self._watch(obj)
                backoff = _BACKOFF_INITIAL
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # an API or transport error: retried, never fatal
                log.warning(
                    "lease candidate %s: %s (retrying in %.1fs)",
                    self.describe(),
                    error_text(exc),
                    backoff,
                )
                await self._clock.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_CAP)

    async def _watch(self, obj: dict[str, Any]) -> None:
        """Answer pings until ``renew_interval`` has passed since ``obj`` was written."""
        deadline = self._clock.monotonic() + self._renew_interval
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        while (remaining := deadline - self._clock.monotonic()) > 0:
            async with self._client.watch(
                LEASE_CANDIDATES,
                namespace=self.namespace,
                field_selector=f"metadata.name={self.name}",
                resource_version=rv or None,
                timeout_seconds=max(1, int(remaining)),
            ) as events:
                async for event in events:
                    meta = event.object.get("metadata") or {}
                    rv = str(meta.get("resourceVersion") or rv)
                    if event.type == "DELETED":
                        return  # ensure() creates it again
                    if event.type in ("ADDED", "MODIFIED") and _pinged(event.object):
                        renewed = await self.ensure(pinged=True)
                        rv = str((renewed.get("metadata") or {}).get("resourceVersion") or rv)


def _pinged(obj: dict[str, Any]) -> bool:
    """A ping not answered yet: pingTime set and not before renewTime."""
    spec = obj.get("spec") or {}
    ping = _parse(spec.get("pingTime"))
    if ping is None:
        return False
    renew = _parse(spec.get("renewTime"))
    return renew is None or ping >= renew


def _parse(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
