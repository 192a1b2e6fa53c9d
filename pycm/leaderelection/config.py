"""LeaderElectionConfig and its validation, as client-go's NewLeaderElector checks it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pycm.leaderelection.resourcelock import ResourceLock
from pycm.util.leasetiming import KUBE_DEFAULTS

__all__ = ["JITTER_FACTOR", "LeaderCallbacks", "LeaderElectionConfig", "LeaderElectionError"]

JITTER_FACTOR = 1.2
"""client-go's retry jitter: each acquire retry waits RetryPeriod × (1 + rand × 1.2)."""


class LeaderElectionError(ValueError):
    """An invalid configuration; ``errors`` lists every problem."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True, slots=True)
class LeaderCallbacks:
    """``on_started_leading`` runs as a task while leading (cancelled when leadership ends);
    ``on_stopped_leading`` runs once when ``run`` ends, leader or not (client-go defers it);
    ``on_new_leader`` whenever the observed holder changes."""

    on_started_leading: Callable[[], Awaitable[None]]
    on_stopped_leading: Callable[[], None]
    on_new_leader: Callable[[str], None] | None = None


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    """client-go's ``leaderelection.LeaderElectionConfig``: what one elector runs with (the
    manager's flags are :class:`pycm.app.config.LeaderElectionConfiguration`)."""

    lock: ResourceLock
    callbacks: LeaderCallbacks
    lease_duration: float = KUBE_DEFAULTS.lease_duration
    renew_deadline: float = KUBE_DEFAULTS.renew_deadline
    retry_period: float = KUBE_DEFAULTS.retry_period
    release_on_cancel: bool = False
    name: str = ""  # the metrics label
    # Bound on stopping the leading work before a release (nothing may reconcile after it).
    stop_timeout: float = field(default=10.0)
    # client-go's Coordinated (KEP-4355): the API server's coordinator picks the holder; the
    # elector never takes a free or expired lease and stops renewing once the Lease names a
    # preferredHolder (tryCoordinatedRenew).
    coordinated: bool = False

    def validate(self) -> list[str]:
        errors = []
        if self.lease_duration <= self.renew_deadline:
            errors.append("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            errors.append("renewDeadline must be greater than retryPeriod*JitterFactor")
        for label, value in (
            ("leaseDuration", self.lease_duration),
            ("renewDeadline", self.renew_deadline),
            ("retryPeriod", self.retry_period),
        ):
            if value < 1e-9:
                errors.append(f"{label} must be greater than zero")
        # Typed as required, but a caller building the config dynamically may pass None.
        if getattr(self, "lock", None) is None:
            errors.append("Lock must not be nil.")
        elif not getattr(self.lock, "identity", ""):
            errors.append("Lock identity is empty")
        if getattr(self.callbacks, "on_started_leading", None) is None:
            errors.append("OnStartedLeading callback must not be nil")
        if getattr(self.callbacks, "on_stopped_leading", None) is None:
            errors.append("OnStoppedLeading callback must not be nil")
        return errors

    def check(self) -> None:
        errors = self.validate()
        if errors:
            raise LeaderElectionError(errors)
