"""The benchmark figure, its one-line format, and timing helpers shared by every benchmark."""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pycm.trace.context import root_context

T = TypeVar("T")

SIZES = ("tiny", "full")


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured figure and its peer, measured in the same run.

    ``ratio`` is oriented so that > 1 means pycm is better than the peer unless the benchmark
    says otherwise in its docstring (for costs it is peer / ours; for throughput ours / peer).
    """

    name: str
    value: float
    unit: str
    peer: str
    peer_value: float
    peer_unit: str
    ratio: float

    def line(self) -> str:
        return (
            f"BENCH {self.name}: {_fmt(self.value)} {self.unit} "
            f"(peer: {self.peer} {_fmt(self.peer_value)} {self.peer_unit}, "
            f"ratio {_fmt(self.ratio)})"
        )


def _fmt(value: float) -> str:
    if value == 0 or abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.2f}"
    if abs(value) >= 1:
        # Three decimals: a ratio near an aim such as 1.05 must show which side it is on.
        return f"{value:.3f}"
    return f"{value:.3g}"


def median_of(repeats: int, measure: Callable[[], float]) -> float:
    """Run ``measure`` ``repeats`` times and return the median of what it returned."""
    return statistics.median(measure() for _ in range(repeats))


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes (perf_counter)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


async def in_worker_context(passes: Coroutine[Any, Any, T]) -> T:
    """Run ``passes`` in a controller worker's context, as the workers' reconciles run (the
    span unset: pycm.trace.context.root_context, which makes opening one cheaper than in a
    context holding one)."""
    return await asyncio.get_running_loop().create_task(passes, context=root_context())


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
