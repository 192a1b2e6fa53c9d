"""Leader election options (component-base's leader election configuration, KCM's flags).

Validation follows KCM and client-go: with --leader-elect on, every duration must be positive,
the lease must outlast the renew deadline, and the renew deadline must exceed 1.2 × the retry
period (client-go's JitterFactor: retries are jittered by up to that much). Only ``leases``
locks exist. With --leader-elect off the election settings are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycm.app.config import Config, LeaderElectionConfiguration
from pycm.app.options.flagset import BOOL, DURATION, STRING, FlagSet, go_quote
from pycm.util.durations import format_duration

__all__ = ["DEFAULT_LEASE_NAMESPACE", "JITTER_FACTOR", "LeaderElectionOptions", "lease_namespace"]

_D = LeaderElectionConfiguration()
JITTER_FACTOR = 1.2  # client-go leaderelection.JitterFactor
_LOCK_TYPES = ("leases",)
DEFAULT_LEASE_NAMESPACE = "kube-system"  # KCM's, where no pod namespace applies


def lease_namespace(given: str, pod_namespace: str) -> str:
    """The Lease's namespace: --leader-elect-resource-namespace when given; otherwise, running
    in-cluster, the pod's own namespace (``pod_namespace``, from its service account; "" when
    not in-cluster), where the manifests' leader-election Role is; otherwise kube-system."""
    return given or pod_namespace or DEFAULT_LEASE_NAMESPACE


@dataclass
class LeaderElectionOptions:
    leader_elect: bool = _D.leader_elect
    lease_duration: float = _D.lease_duration
    renew_deadline: float = _D.renew_deadline
    retry_period: float = _D.retry_period
    resource_lock: str = _D.resource_lock
    resource_name: str = _D.resource_name
    # "": decided when the client configuration is known (lease_namespace).
    resource_namespace: str = ""
    identity: str = _D.identity
    warm_standby: bool = _D.warm_standby

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "leader_elect",
            "leader-elect",
            BOOL,
            "Take part in leader election and run the controllers only while leading; turn it "
            "on whenever more than one replica runs.",
        )
        fs.add(
            self,
            "lease_duration",
            "leader-elect-lease-duration",
            DURATION,
            "How long other candidates wait after the last renewal before taking the lease "
            "(the longest time without a leader when one dies).",
        )
        fs.add(
            self,
            "renew_deadline",
            "leader-elect-renew-deadline",
            DURATION,
            "How long the leader keeps trying to renew before it gives up leading; less than "
            "the lease duration.",
        )
        fs.add(
            self,
            "retry_period",
            "leader-elect-retry-period",
            DURATION,
            "How long candidates wait between attempts to acquire or renew the lease.",
        )
        fs.add(
            self,
            "resource_lock",
            "leader-elect-resource-lock",
            STRING,
            "The kind of lock object; only 'leases' is supported.",
        )
        fs.add(
            self,
            "resource_name",
            "leader-elect-resource-name",
            STRING,
            "The name of the Lease object that holds the lock.",
        )
        fs.add(
            self,
            "resource_namespace",
            "leader-elect-resource-namespace",
            STRING,
            "The namespace of the Lease object that holds the lock; empty means the pod's own "
            f"namespace when running in-cluster, else {DEFAULT_LEASE_NAMESPACE}.",
        )
        fs.add(
            self,
            "identity",
            "identity",
            STRING,
            "The holder identity written into the Lease; empty means the host name, '_' and a "
            "random UUID.",
        )
        fs.add(
            self,
            "warm_standby",
            "leader-elect-warm-standby",
            BOOL,
            "Start the informers before leading, so a standby's caches are synced when it takes "
            "over and its controllers reconcile at once instead of listing everything first; "
            "its workers start, and its controllers write, only once it leads. pycm's own flag: "
            "KCM has no such flag (controller-runtime calls it EnableWarmup).",
        )

    def validate(self) -> list[str]:
        if not self.leader_elect:
            return []
        errors = []
        durations = (
            ("leader-elect-lease-duration", self.lease_duration),
            ("leader-elect-renew-deadline", self.renew_deadline),
            ("leader-elect-retry-period", self.retry_period),
        )
        for flag, value in durations:
            if value <= 0:
                errors.append(f"{flag} must be greater than zero, got {format_duration(value)}")
        if self.lease_duration <= self.renew_deadline:
            errors.append(
                "leader-elect-lease-duration must be greater than leader-elect-renew-deadline "
                f"(got {format_duration(self.lease_duration)} and "
                f"{format_duration(self.renew_deadline)})"
            )
        floor = JITTER_FACTOR * self.retry_period
        if self.renew_deadline <= floor:
            errors.append(
                "leader-elect-renew-deadline must be greater than "
                f"{JITTER_FACTOR} × leader-elect-retry-period "
                f"(got {format_duration(self.renew_deadline)}, want more than "
                f"{format_duration(floor)})"
            )
        if self.resource_lock not in _LOCK_TYPES:
            errors.append(
                f"leader-elect-resource-lock {go_quote(self.resource_lock)} is not supported: "
                'only "leases" is'
            )
        if not self.resource_name:
            errors.append("leader-elect-resource-name must not be empty")
        return errors

    def apply_to(self, config: Config) -> None:
        config.leader_election = LeaderElectionConfiguration(
            leader_elect=self.leader_elect,
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
            resource_lock=self.resource_lock,
            resource_name=self.resource_name,
            resource_namespace=self.resource_namespace,
            identity=self.identity,
            warm_standby=self.warm_standby,
        )
