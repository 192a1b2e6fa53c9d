"""The sink's memory of decided traces, for children that end after their root.

A child span (an API request, a nested step) may end after its trace's root reconcile was
decided: the sink then looks the decision up here. The memory is two generations of about
:data:`MAX_DECIDED` traces each (a dict per generation: the newest is filled — past this size
by at most one drained batch — and the older one dropped whole), so a late child finds its
trace's decision for a while and the memory stays bounded without per-entry eviction.

Nine in ten reconciles are dropped, and a decision is looked up only for a child that ends
after its root (or one in flight): a dropped trace's id is appended to the generation's
``lazy`` list, not hashed into ``decided`` one by one, and folded in when a lookup comes (or
never: a generation of a no-op resync's ids is dropped whole). An entry of ``lazy`` is a
dropped trace id as its text, or, for a root reconcile whose begin holds ``root_key`` (the
bus's id key, the first seen: the same for all of them), its begin's seq, an int, for a
dropped one, and the seq negated for one the ratio kept in a run
(:meth:`pycm.otel.fastpath.FastPath.root_run`): the ids are derived and their text made when
folded in. Not the begin record: records kept here past the bus's ring are tracked objects the
young collections keep walking (measured: 2.5 collections and ~1.4 ms a pass of 2000 no-op
reconciles, ~0.7 µs a reconcile), where an int is not tracked.
"""

from __future__ import annotations

from pycm.otel.sampling import Decision
from pycm.trace.context import IdKey, root_low

__all__ = ["MAX_DECIDED", "DecisionMemory"]

# About this many traces a generation (read when a generation may be due, so a test can
# lower it).
MAX_DECIDED = 8192

_SAMPLED, _SAMPLED_OUT = Decision.SAMPLED, Decision.SAMPLED_OUT


class DecisionMemory:
    """Invariants: ``decided`` and ``lazy`` are the newest generation, ``decided_old`` and
    ``lazy_old`` the one before; a trace id is in at most one of ``decided`` and ``lazy`` of
    the same generation; an int in ``lazy`` or ``lazy_old`` is a seq under ``root_key`` (which
    is set before the first one is appended). The fast path appends to ``lazy`` and writes to
    ``decided`` directly, reading both afresh after any call that may start a generation."""

    __slots__ = ("decided", "decided_old", "lazy", "lazy_old", "root_key")

    def __init__(self) -> None:
        self.decided: dict[str, Decision] = {}
        self.decided_old: dict[str, Decision] = {}
        self.lazy: list[str | int] = []
        self.lazy_old: list[str | int] = []
        self.root_key: IdKey | None = None

    def get(self, trace_id: str) -> Decision | None:
        """The decision remembered for ``trace_id``, if either generation holds one."""
        if self.lazy or self.lazy_old:
            self.settle()
        decision = self.decided.get(trace_id)
        return self.decided_old.get(trace_id) if decision is None else decision

    def settle(self) -> None:
        """Fold the lazy decisions into their generations' dicts."""
        key = self.root_key
        for lazy, decided in ((self.lazy, self.decided), (self.lazy_old, self.decided_old)):
            for d in lazy:
                if isinstance(d, str):
                    decided[d] = _SAMPLED_OUT
                else:
                    assert key is not None  # an int is a seq under the key
                    trace_id = f"{key[0]}{root_low(key, abs(d)):016x}"
                    decided[trace_id] = _SAMPLED_OUT if d > 0 else _SAMPLED
            lazy.clear()

    def remember(self, trace_id: str, decision: Decision) -> None:
        self.decided[trace_id] = decision
        self.rotate_if_full()

    def rotate_if_full(self) -> None:
        """Start a new generation when the newest is full (the older one is forgotten)."""
        if len(self.decided) + len(self.lazy) >= MAX_DECIDED:
            self.new_generation()

    def new_generation(self) -> None:
        self.decided_old, self.decided = self.decided, {}
        self.lazy_old, self.lazy = self.lazy, []
