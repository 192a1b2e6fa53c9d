"""Debugging options: faults a replica injects into itself, hidden from --help.

``--debug-clock-rate`` and ``--debug-clock-offset`` run the replica's clock (the one its leader
elector, reconcile gate, write fence, queues and informers use) at a rate and its wall clock at
an offset (:class:`pycm.util.clock.SkewedClock`), to show a leader flap caused by clock-rate skew
and where leader election's margin against it ends (docs/operations.md). They are hidden as
pflag's MarkHidden hides a flag: parsed like any other, absent from help.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pycm.app.config import Config, DebuggingConfig
from pycm.app.options.flagset import FLOAT32, SIGNED_DURATION, FlagSet

__all__ = ["DebuggingOptions"]

_D = DebuggingConfig()
# Bounds that keep the fault a skew, not a stopped or a runaway clock.
MIN_RATE, MAX_RATE = 0.01, 100.0


@dataclass
class DebuggingOptions:
    clock_rate: float = _D.clock_rate
    clock_offset: float = _D.clock_offset

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "clock_rate",
            "debug-clock-rate",
            FLOAT32,
            "A fault for debugging: run this replica's clock at this many times real time "
            "(leader election, the reconcile gate, queues, sleeps); 2 runs it twice as fast.",
            hidden=True,
        )
        fs.add(
            self,
            "clock_offset",
            "debug-clock-offset",
            SIGNED_DURATION,
            "A fault for debugging: shift this replica's wall clock (the times it writes into "
            "its Lease and Events) by this duration; may be negative.",
            hidden=True,
        )

    def validate(self) -> list[str]:
        if not (math.isfinite(self.clock_rate) and MIN_RATE <= self.clock_rate <= MAX_RATE):
            return [
                f"--debug-clock-rate {self.clock_rate:g} must be between {MIN_RATE:g} and "
                f"{MAX_RATE:g}"
            ]
        return []

    def apply_to(self, config: Config) -> None:
        config.debugging = DebuggingConfig(
            clock_rate=self.clock_rate, clock_offset=self.clock_offset
        )
