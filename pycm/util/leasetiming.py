"""Leader election's three timings, and Kubernetes' defaults for them, written once.

client-go's elector and KCM's ``--leader-elect-*`` flags default to a 15 s lease duration, a
10 s renew deadline and a 2 s retry period (component-base's
``RecommendedDefaultLeaderElectionConfiguration``). The elector's config and the manager's
options take their defaults from :data:`KUBE_DEFAULTS`; the viewers fall back to it only for a
recording made before the elector put its timings in the trace
(:class:`~pycm.trace.kinds.LeaderElectionConfigured`), and say so.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KUBE_DEFAULTS", "LeaseTiming"]


@dataclass(frozen=True, slots=True)
class LeaseTiming:
    """Seconds: how long a lease is valid after its last renew as seen by a candidate
    (``lease_duration``), how long a leader keeps retrying a renew before it stops leading
    (``renew_deadline``), and the wait between attempts (``retry_period``)."""

    lease_duration: float
    renew_deadline: float
    retry_period: float


KUBE_DEFAULTS = LeaseTiming(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)
