"""Installing an example plugin as a user would, for tests: offline, into a folder of its own."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def uv() -> str:
    """The project's uv (``make env`` bootstraps it into .bootstrap/), else one on PATH."""
    found = ROOT / ".bootstrap" / "bin" / "uv"
    if found.exists():
        return str(found)
    which = shutil.which("uv")
    assert which, "uv is needed to install the example plugin (make env bootstraps it)"
    return which


def install_example(example: Path, tmp: Path) -> Path:
    """``example`` (a project folder) installed into ``tmp/site`` — offline, no build
    isolation (hatchling from the venv), no dependencies (pycm is the host) — to be put on
    PYTHONPATH as a user's site would be."""
    target = tmp / "site"
    proc = subprocess.run(
        [
            uv(),
            "pip",
            "install",
            "--offline",
            "--no-deps",
            "--no-build-isolation",
            "--cache-dir",
            str(tmp / "cache"),
            "--python",
            sys.executable,
            "--target",
            str(target),
            str(example),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return target
