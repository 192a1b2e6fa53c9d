"""The controller context as the manager builds it.

The type itself is public and lives with the controller API
(:class:`pycm.controller.ControllerContext`), so plugins import it from there; this module
re-exports it for the composition root and keeps KCM's resync-period jitter.
"""

from __future__ import annotations

import random

from pycm.controller.context import ControllerContext

__all__ = ["ControllerContext", "resync_period"]


def resync_period(min_resync_period: float, rng: random.Random) -> float:
    """KCM's ResyncPeriod: min_resync_period × (1 + rand) — 12–24 h by default, so the
    informers of one manager do not all resync at once."""
    return min_resync_period * (1.0 + rng.random())
