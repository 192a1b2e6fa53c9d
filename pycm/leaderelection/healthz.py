"""The leader-election watchdog: unhealthy when leading on a lease not renewed in time.

As client-go's HealthzAdaptor: healthy when not leading (standbys are healthy), or when the
last observed write of the lease is within LeaseDuration + tolerance (KCM uses 20 s). A
leader whose renewals stall — a wedged event loop, a partitioned API server — turns unhealthy
before another replica could have taken over for long, so a liveness probe restarts it.
"""

from __future__ import annotations

from pycm.leaderelection.elector import LeaderElector
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["DEFAULT_TOLERANCE", "LeaderHealthzAdaptor"]

DEFAULT_TOLERANCE = 20.0


class LeaderHealthzAdaptor:
    name = "leaderElection"

    def __init__(self, tolerance: float = DEFAULT_TOLERANCE, clock: Clock = REAL_CLOCK) -> None:
        self.tolerance = tolerance
        self._clock = clock
        self._elector: LeaderElector | None = None

    def set_elector(self, elector: LeaderElector) -> None:
        self._elector = elector

    def check(self) -> str | None:
        """None when healthy, else the failure text (logged; withheld from HTTP answers)."""
        elector = self._elector
        if elector is None or not elector.is_leader():
            return None
        since = self._clock.monotonic() - elector.observed_time
        if since > elector.config.lease_duration + self.tolerance:
            # client-go's Check names the lease by config.Name (KCM: the lease's name).
            name = elector.config.name or elector.config.lock.describe()
            return f"failed election to renew leadership on lease {name}"
        return None

    async def __call__(self) -> str | None:
        return self.check()
