"""What every part of the manager is built with: one frozen bundle of references, so
serving, the election, StartControllers and the observers do not each take the same eight
arguments. It holds no state of its own and no behaviour: the Manager builds it once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from pycm.app.config import CompletedConfig
from pycm.app.runnables import RunnableGroups
from pycm.server import HealthRegistry
from pycm.trace.bus import Bus
from pycm.util.clock import Clock

__all__ = ["Parts"]


@dataclass(frozen=True)
class Parts:
    config: CompletedConfig
    identity: str  # the elector's identity, the bus's instance
    bus: Bus
    clock: Clock
    health: HealthRegistry  # /healthz /livez /readyz checks
    metrics_registry: CollectorRegistry
    groups: RunnableGroups  # where each part joins, in the start order
    fail: Callable[[str], None]  # stops the manager with one line (exit 1)
