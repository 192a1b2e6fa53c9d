"""The controller context: what StartControllers hands every controller's init function.

As KCM's ControllerContext: a client builder (each controller gets its own client with user
agent ``pycm/<controller>``; the root client is reserved for the informers), the shared
informer factory and the metadata-only one (both drop managedFields; resync jittered from
--min-resync-period), the InformersStarted signal, the event recorder factory, the completed
config, the bus and the clock.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pycm.app.config import CompletedConfig
from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.controller.metrics import ControllerMetrics
from pycm.controller.worker import Controller
from pycm.trace.bus import Bus
from pycm.util.clock import Clock

__all__ = ["ControllerContext", "resync_period"]


def resync_period(min_resync_period: float, rng: random.Random) -> float:
    """KCM's ResyncPeriod: min_resync_period × (1 + rand) — 12–24 h by default, so the
    informers of one manager do not all resync at once."""
    return min_resync_period * (1.0 + rng.random())


@dataclass
class ControllerContext:
    config: CompletedConfig
    bus: Bus
    clock: Clock
    # name -> a client whose user agent names the controller.
    client_for: Callable[[str], Any]
    informer_factory: SharedInformerFactory
    metadata_informer_factory: MetadataInformerFactory
    # Builds an EventRecorder whose source component is the controller's name.
    recorder_for: Callable[[str], Any]
    metrics: ControllerMetrics | None = None
    informers_started: asyncio.Event = field(default_factory=asyncio.Event)
    # Controller name -> its worker-loop Controller (for the queue-progress health check).
    queues: dict[str, Controller] = field(default_factory=dict)
