"""Keeping the emulator's full garbage collections short as its store and watch history grow.

Why: the emulator holds every object, and every event of its watch history, as a tree of dicts
and lists (10k pods and a 50k-event history are ~5M objects the collector tracks). CPython's
full (generation 2) collection runs once the long-lived objects grew by a quarter, and scans all
of them: measured on a 2-core machine, 1.2 s at 1.3M objects and 4.9 s at 5.2M, during which
the emulator serves nothing. A watch stream stalls for those seconds (one run of
``bench/informers.py`` printed 7.9k watch events/s instead of ~40k: a 5 s pause in its 1.3 s
replay would), and a leader's lease renewal can miss its deadline. ``python -m bench sim_heap``
measures the longest stall with and without this policy. The trees never form reference
cycles (they are decoded JSON), so those scans find nothing to free.

What: after each full collection :func:`freeze_after_full_collections` calls ``gc.freeze()``,
which moves every survivor to the permanent generation; the next full collection scans only
what was allocated since. Frozen objects are still freed by reference counting when the store
or the history drops them. The cost: a reference cycle through an object that was alive at a
freeze is never collected (a cycle among new objects still is) — an emulator's long-lived
objects are its store, its history and its open connections.

It is process-wide state: the process's owner opts in (``pycm sim``); :func:`run_emulator` in a
test's process leaves the collector as it is. pycm's informers do the same for their caches
(pycm.util.gc_tuning).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

__all__ = ["freeze_after_full_collections"]

_OLDEST = 2  # the generation a full collection is named by in the callbacks' info


def _freeze_survivors(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info["generation"] == _OLDEST:
        gc.freeze()


def freeze_after_full_collections() -> Callable[[], None]:
    """Freeze the survivors of every full collection from now on; returns the undo (which
    leaves frozen what is frozen). Installing it twice installs it once."""
    if _freeze_survivors not in gc.callbacks:
        gc.callbacks.append(_freeze_survivors)

    def undo() -> None:
        if _freeze_survivors in gc.callbacks:
            gc.callbacks.remove(_freeze_survivors)

    return undo
