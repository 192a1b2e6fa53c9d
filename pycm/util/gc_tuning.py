"""Keeping Python's cyclic GC from dominating bulk decoding into the cache, and a process's
start-up.

Why: a cache holds hundreds of thousands of long-lived dicts and lists. Each generation-0
collection triggered while a big list is being decoded promotes survivors, and the full
collections that follow scan everything already cached, again and again: on CPython 3.11 the
collector costs 4–7× the JSON parse time of a large list (measured in ``bench/informers.py``).
Cached API objects are trees of dicts, lists and strings — they never form reference cycles —
so scanning them finds nothing.

What, and when:

- :func:`gc_paused` disables automatic collection while a list is decoded and stored (nested
  and concurrent uses are counted; the collector comes back when the last one ends, even on
  error or cancellation). The pause spans awaits, so other tasks run without automatic GC for
  the list's duration: bounded, and reference counting still frees everything acyclic.
- :func:`freeze_survivors` calls ``gc.freeze()`` after an initial list has been stored: every
  object alive then moves to the permanent generation and later collections skip it. Frozen
  objects are still freed by reference counting when the cache drops them. The reflector calls
  it for the initial list *before* the pause ends: re-enabling first let the next allocation
  collect everything the list had allocated (a young collection over the whole new cache,
  60–80 ms per 10k pods), which cost more than the pause saved.
- :func:`tune_thresholds` raises the generation-0 threshold (700 → 10 000 by default) so a
  steady stream of watch events triggers far fewer young collections.

All of it is process-wide state; the informer factory applies it (``gc_tuning=True``) and a test
or a host application can opt out. The ``pycm`` process's entry (:func:`pycm.cli.entry`) does the
same for the modules it loads: paused while they load, frozen before the pause ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["freeze_survivors", "gc_paused", "tune_thresholds"]

# How many gc_paused() blocks are open, and whether the collector was enabled before the first.
_depth = 0
_was_enabled = True

DEFAULT_GEN0_THRESHOLD = 10_000


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable automatic garbage collection for the block (re-entrant, counted)."""
    global _depth, _was_enabled
    if _depth == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _was_enabled:
            gc.enable()


def freeze_survivors() -> None:
    """Move every object the collector tracks into the permanent generation (O(1): the
    generation lists are spliced; counting them, ``gc.get_freeze_count()``, is O(n))."""
    gc.freeze()


def tune_thresholds(gen0: int = DEFAULT_GEN0_THRESHOLD) -> tuple[int, int, int]:
    """Raise the generation-0 threshold (never lowers it); returns the previous thresholds."""
    previous = gc.get_threshold()
    if gen0 > previous[0]:
        gc.set_threshold(gen0, previous[1], previous[2])
    return previous
