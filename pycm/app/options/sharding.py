"""Sharding flags (pycm's own; KCM has none): ``--sharded`` and the membership Lease timings.

In sharded mode every replica runs the sharded controllers on its share of the namespaces: each
holds a membership Lease (``<ring>-<identity>`` in the lease namespace, labelled with the ring)
and the live members split a consistent-hash ring (pycm.sharding). Controllers that must run
once (a descriptor's ``sharding="singleton"``) run under the ordinary leader lease in the same
processes. The timings follow the leader election's rules (client-go's ratios, checked the
same way) and default to its values.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycm.app.config import Config, ShardingConfig
from pycm.app.options.flagset import BOOL, DURATION, STRING, FlagSet, go_quote
from pycm.app.options.leaderelection import DEFAULT_LEASE_NAMESPACE, JITTER_FACTOR
from pycm.util.durations import format_duration

__all__ = ["ShardingOptions"]

_D = ShardingConfig()
# A Lease name is <ring>-<identity>: the ring is a DNS-1123 label itself, short enough to
# leave room for the identity.
_RING_MAX = 30


@dataclass
class ShardingOptions:
    sharded: bool = _D.sharded
    ring: str = _D.ring
    lease_namespace: str = _D.lease_namespace
    lease_duration: float = _D.lease_duration
    renew_deadline: float = _D.renew_deadline
    retry_period: float = _D.retry_period

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "sharded",
            "sharded",
            BOOL,
            "Run as one member of a sharded ring: every replica reconciles its share of the "
            "namespaces (a consistent-hash ring over the members' Leases) instead of one leader "
            "doing all; controllers marked singleton still run only on the elected leader.",
        )
        fs.add(
            self,
            "ring",
            "sharding-ring",
            STRING,
            "The ring's name: the members' Leases are named <ring>-<identity> and labelled "
            "sharding.pycm.io/ring=<ring>. Replicas with the same ring share the work.",
        )
        fs.add(
            self,
            "lease_namespace",
            "sharding-lease-namespace",
            STRING,
            "The namespace of the members' Leases; empty means the pod's own namespace when "
            f"running in-cluster, else {DEFAULT_LEASE_NAMESPACE}.",
        )
        fs.add(
            self,
            "lease_duration",
            "sharding-lease-duration",
            DURATION,
            "How long a member's keys stay its own after its last renewal (the longest time "
            "a dead member's namespaces go unreconciled).",
        )
        fs.add(
            self,
            "renew_deadline",
            "sharding-renew-deadline",
            DURATION,
            "How long a member keeps reconciling without renewing its Lease before it stops "
            "taking keys and writing; less than the lease duration.",
        )
        fs.add(
            self,
            "retry_period",
            "sharding-retry-period",
            DURATION,
            "How often a member renews its Lease and reads the ring.",
        )

    def validate(self) -> list[str]:
        if not self.sharded:
            return []
        errors = []
        durations = (
            ("sharding-lease-duration", self.lease_duration),
            ("sharding-renew-deadline", self.renew_deadline),
            ("sharding-retry-period", self.retry_period),
        )
        for flag, value in durations:
            if value <= 0:
                errors.append(f"{flag} must be greater than zero, got {format_duration(value)}")
        if self.lease_duration <= self.renew_deadline:
            errors.append(
                "sharding-lease-duration must be greater than sharding-renew-deadline "
                f"(got {format_duration(self.lease_duration)} and "
                f"{format_duration(self.renew_deadline)})"
            )
        floor = JITTER_FACTOR * self.retry_period
        if self.renew_deadline <= floor:
            errors.append(
                f"sharding-renew-deadline must be greater than {JITTER_FACTOR} × "
                f"sharding-retry-period (got {format_duration(self.renew_deadline)}, want more "
                f"than {format_duration(floor)})"
            )
        if not _is_label(self.ring) or len(self.ring) > _RING_MAX:
            errors.append(
                f"sharding-ring {go_quote(self.ring)} must be a DNS-1123 label of at most "
                f"{_RING_MAX} characters (lower-case letters, digits and '-', starting and "
                "ending with a letter or digit)"
            )
        return errors

    def apply_to(self, config: Config) -> None:
        config.sharding = ShardingConfig(
            sharded=self.sharded,
            ring=self.ring,
            lease_namespace=self.lease_namespace,
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
        )


def _is_label(text: str) -> bool:
    if not text or text[0] == "-" or text[-1] == "-":
        return False
    return all(c.isdigit() or ("a" <= c <= "z") or c == "-" for c in text)
