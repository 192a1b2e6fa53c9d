"""The feed of the dashboard mounted in ``pycm run``: the process's own bus, into the hub.

One bounded bus subscription per process, however many viewers: it is drained in batches
(:data:`BATCH_INTERVAL_S`, the hub's flush rate) rather than woken per event, so the manager
pays one wake-up a quarter second for its dashboard. Like every bus subscriber it can never
slow the emitters: if it falls behind, the bus drops its oldest events and the hub receives a
``bus.lagged`` event with the count.
"""

from __future__ import annotations

import asyncio

from pycm.trace.bus import Bus
from web.hub import FLUSH_INTERVAL_S, Hub

__all__ = ["BATCH_INTERVAL_S", "SUBSCRIBER_QUEUE", "BusFeed"]

BATCH_INTERVAL_S = FLUSH_INTERVAL_S
# A quarter second of a very busy manager (20k events/s) fits several times over.
SUBSCRIBER_QUEUE = 32768


class BusFeed:
    def __init__(self, bus: Bus, hub: Hub, source: str) -> None:
        self.bus = bus
        self.hub = hub
        self.source = source

    async def run(self) -> None:
        """Push the bus's events (the ring's backlog first) until cancelled."""
        hub, source = self.hub, self.source
        hub.set_status(source, "connected")
        subscription = self.bus.subscribe(name="dashboard", maxsize=SUBSCRIBER_QUEUE, since=0)
        try:
            while not subscription.closed:
                await subscription.wait()
                hub.push(source, subscription.drain())
                await asyncio.sleep(BATCH_INTERVAL_S)
        finally:
            subscription.close()
            hub.set_status(source, "ended")
