"""Leader election with client-go's algorithm, on a Lease.

- :mod:`~pycm.leaderelection.record` — the LeaderElectionRecord and its Lease-spec form.
- :mod:`~pycm.leaderelection.resourcelock` — the ResourceLock protocol and the Lease lock.
- :mod:`~pycm.leaderelection.config` — LeaderElectionConfig and its validation.
- :mod:`~pycm.leaderelection.elector` — LeaderElector: acquire, renew, release (RunOrDie);
  with ``coordinated``, client-go's coordinated elector (KEP-4355).
- :mod:`~pycm.leaderelection.candidate` — LeaseCandidate: the candidate object a coordinated
  elector publishes and renews when the API server's coordinator pings it.
- :mod:`~pycm.leaderelection.healthz` — the watchdog health check.
"""

from pycm.leaderelection.config import LeaderCallbacks, LeaderElectionConfig, LeaderElectionError
from pycm.leaderelection.elector import LeaderElector
from pycm.leaderelection.healthz import LeaderHealthzAdaptor
from pycm.leaderelection.record import LeaderElectionRecord
from pycm.leaderelection.resourcelock import LockConflict, LockNotFound, ResourceLock

__all__ = [
    "LeaderCallbacks",
    "LeaderElectionConfig",
    "LeaderElectionError",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaderHealthzAdaptor",
    "LockConflict",
    "LockNotFound",
    "ResourceLock",
]
