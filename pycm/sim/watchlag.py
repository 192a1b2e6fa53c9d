"""A lagging watch: every live event of one watch delivered ``seconds`` after it happened.

What a ``watch-lag`` fault (:mod:`pycm.sim.faults`) does to the watches opened while it is
active: the informer behind such a watch sees the cluster as it was ``seconds`` ago — the stale
cache that the controllers' staleness guard is about (a slow or congested apiserver, a watch
cache behind etcd). Events keep their order (each is handed on by one timer, all with the same
delay), the initial events are not held back (a list would not be either), and a bookmark is
never sent while lagged events are still on their way: :attr:`LaggedWatcher.pending` counts
them, and the stream sends bookmarks only when nothing is pending, so a bookmark's version never
runs ahead of an event the client has not had.
"""

from __future__ import annotations

import asyncio

from pycm.sim.watch import StoreEvent, Watcher

__all__ = ["WATCH_LAG_SCOPE_KEY", "LaggedWatcher", "lag"]

WATCH_LAG_SCOPE_KEY = "pycm.sim.watch_lag"
"""Where a watch-lag fault leaves, in the request's ASGI scope, the seconds its watch lags."""


class LaggedWatcher(Watcher):
    """A :class:`Watcher` whose live events reach its queue ``lag_seconds`` late."""

    lag_seconds: float = 0.0
    in_flight: int = 0  # events offered and not yet queued

    def offer(self, event: StoreEvent) -> None:
        if self.closed:
            return
        self.in_flight += 1
        asyncio.get_running_loop().call_later(self.lag_seconds, self._arrive, event)

    def _arrive(self, event: StoreEvent) -> None:
        self.in_flight -= 1
        super().offer(event)

    @property
    def pending(self) -> int:
        return super().pending + self.in_flight


def lag(watcher: Watcher, seconds: float) -> Watcher:
    """Make ``watcher`` (just opened, registered with the store) lag by ``seconds``.

    The class is swapped on the instance rather than the store asked for another kind of
    watcher: the store makes every watcher the same way, and only the fault's watches lag."""
    if seconds <= 0:
        return watcher
    watcher.__class__ = LaggedWatcher
    assert isinstance(watcher, LaggedWatcher)
    watcher.lag_seconds = seconds
    watcher.in_flight = 0
    return watcher
