"""bench.controllers' callgrind child (``python -m bench.controllers instructions PASSES
DEPLOYMENTS``): a command line that is not one gets the usage line and exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.controllers import _counts

ROOT = Path(__file__).resolve().parents[2]


def test_counts_takes_two_positive_whole_numbers_after_instructions() -> None:
    assert _counts(["instructions", "5", "200"]) == (5, 200)
    for bad in (
        [],
        ["traced", "5", "200"],
        ["instructions", "5"],
        ["instructions", "x", "200"],
        ["instructions", "-1", "200"],
        ["instructions", "0", "200"],
        ["instructions", "5", "0"],
        ["instructions", "5", "200", "1"],
    ):
        assert _counts(bad) is None, bad


@pytest.mark.parametrize("args", [["instructions", "x", "3"], ["nope"]])
def test_bad_command_line_is_the_usage_line_and_exit_2(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.controllers", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("usage: python -m bench.controllers instructions")
    assert "Traceback" not in done.stderr
