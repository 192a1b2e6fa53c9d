"""Every benchmark runs at size tiny and prints well-formed BENCH lines (CI keeps them working)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import available

ROOT = Path(__file__).resolve().parents[2]

_NUMBER = r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?"
BENCH_LINE = re.compile(
    rf"^BENCH (?P<name>[\w.]+): (?P<value>{_NUMBER}) (?P<unit>\S+) "
    rf"\(peer: (?P<peer>\S+) (?P<peer_value>{_NUMBER}) (?P<peer_unit>\S+), "
    rf"ratio (?P<ratio>{_NUMBER})\)$"
)

# Figures a bench prints only when its tools are there (tests/system-deps.sh brings them for
# `make test`): present here, with a ratio above this floor. Traced syncs execute more
# instructions than bare ones; a ratio of 1 or below would mean both sides counted the same.
_REQUIRED = {"controllers": {"controllers.tracing_instructions": 1.0}}


def test_bench_line_regex_accepts_the_harness_format_and_rejects_inf() -> None:
    from bench.harness import Figure

    good = Figure("x.y", 1234.5, "events/s", "peer.z", 0.00012, "µs", 2.5).line()
    assert BENCH_LINE.match(good), good
    bad = Figure("x.y", float("inf"), "events/s", "peer.z", 1.0, "µs", float("nan")).line()
    assert not BENCH_LINE.match(bad), bad


@pytest.mark.parametrize("name", available())
def test_bench_tiny_size_runs_and_prints_bench_lines(name: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", name, "--size", "tiny"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("BENCH")]
    assert lines, f"bench {name} printed no BENCH line:\n{result.stdout}"
    ratios = {}
    for line in lines:
        match = BENCH_LINE.match(line)
        assert match, f"malformed: {line!r}"
        ratios[match["name"]] = float(match["ratio"])
    for figure, above in _REQUIRED.get(name, {}).items():
        assert figure in ratios, f"bench {name} left out {figure}:\n{result.stderr}"
        assert ratios[figure] > above, f"{figure}: ratio {ratios[figure]}"
