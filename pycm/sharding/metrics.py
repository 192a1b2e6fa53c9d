"""A sharded member's metrics, named as timebertt's kubernetes-controller-sharding names its
(``controller_sharding_*``), on the manager's Prometheus registry.

- ``controller_sharding_members{ring}``: the live members this member sees (itself included).
- ``controller_sharding_share_ratio{ring,member}``: its share under the view it has published
  (what it may reconcile): of the namespaces the ring's layout places, else of the hash space.
- ``controller_sharding_keys_owned{ring,member}``: the reconcile keys of its share — the
  objects its sharded controllers' primary informers cache, each once — and
  ``controller_sharding_objects_cached{ring,member}``: every object its sharded informers cache
  (the keys' objects and what they read besides, pods of replica sets, say). Both are read at
  scrape time; during a drain both count the share it gives up too.
- ``controller_sharding_drains_total{ring}`` and ``controller_sharding_drain_duration_seconds``
  ``{ring}``: finished drains (a share given up) and how long each waited for in-flight keys.
- ``controller_sharding_drain_in_progress_seconds{ring,member}``: the age of the running drain,
  0 when none (read at scrape time, so a drain that never finishes shows; the alert compares it
  with ``controller_sharding_lease_duration_seconds``, the bound after which a silent member's
  keys move anyway).
- ``controller_sharding_lease_lost_total{ring}``: times this member's own Lease went unrenewed
  past the renew deadline (fenced: it stopped taking keys).
- ``controller_sharding_lease_duration_seconds{ring}``: its ``--sharding-lease-duration``.

The membership loop (:mod:`pycm.sharding.membership`) feeds them; the sharded member hands in
the counts of keys and of cached objects.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["ShardingMetrics"]

# Drains wait for in-flight reconciles: milliseconds when none runs, up to a slow reconcile's
# length; past the lease duration (15 s by default) the alert fires.
_DRAIN_BUCKETS = (0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 15, 30, 60, 120)


class ShardingMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.members = Gauge(
            "controller_sharding_members",
            "Live members of the ring as this member sees them, itself included.",
            ["ring"],
            registry=registry,
        )
        self.share_ratio = Gauge(
            "controller_sharding_share_ratio",
            "This member's share under the view it has published: of the namespaces the ring's "
            "layout places, else of the hash space.",
            ["ring", "member"],
            registry=registry,
        )
        self.keys_owned = Gauge(
            "controller_sharding_keys_owned",
            "Reconcile keys of this member's share: objects its sharded controllers' primary "
            "informers cache.",
            ["ring", "member"],
            registry=registry,
        )
        self.objects_cached = Gauge(
            "controller_sharding_objects_cached",
            "Objects cached by this member's sharded informers (the keys' and the rest).",
            ["ring", "member"],
            registry=registry,
        )
        self.drains_total = Counter(
            "controller_sharding_drains_total",
            "Drains finished: a share given up after its in-flight keys were reconciled.",
            ["ring"],
            registry=registry,
        )
        self.drain_duration = Histogram(
            "controller_sharding_drain_duration_seconds",
            "Time from a drain's start to the publish of the new view.",
            ["ring"],
            buckets=_DRAIN_BUCKETS,
            registry=registry,
        )
        self.drain_in_progress = Gauge(
            "controller_sharding_drain_in_progress_seconds",
            "Age of the drain this member is running, 0 when none.",
            ["ring", "member"],
            registry=registry,
        )
        self.lease_lost_total = Counter(
            "controller_sharding_lease_lost_total",
            "Times this member's Lease was not renewed within the renew deadline (fenced).",
            ["ring"],
            registry=registry,
        )
        self.lease_duration = Gauge(
            "controller_sharding_lease_duration_seconds",
            "The membership Lease duration: a silent member's keys move after it.",
            ["ring"],
            registry=registry,
        )

    def watch_member(
        self,
        ring: str,
        member: str,
        lease_duration: float,
        drain_age: Callable[[], float],
    ) -> None:
        """Start this member's series: the lease bound, and the drain age read at scrape."""
        self.lease_duration.labels(ring).set(lease_duration)
        self.drain_in_progress.labels(ring, member).set_function(drain_age)
        self.lease_lost_total.labels(ring)  # 0 from the start, so increase() sees the first
        self.drains_total.labels(ring)

    def watch_keys(
        self, ring: str, member: str, keys: Callable[[], int], objects: Callable[[], int]
    ) -> None:
        """Read ``controller_sharding_keys_owned`` from ``keys()`` and
        ``controller_sharding_objects_cached`` from ``objects()`` at each scrape."""
        self.keys_owned.labels(ring, member).set_function(keys)
        self.objects_cached.labels(ring, member).set_function(objects)
