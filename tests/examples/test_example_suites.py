"""Every example's own suite runs with plain pytest in its directory (pycm.testing's fixtures
come from the installed pycm's pytest11 entry point; nothing of pycm's own tests is used).
The website operator's runs in a fresh environment with pycm from its wheel, as
docs/controllers.md's walkthrough installs it: tests/testing/test_wheel.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_echo_controller_own_suite_passes_with_plain_pytest() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KUBECONFIG")}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT / "examples" / "echo-controller",
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert "1 passed" in ran.stdout
