"""No symlink is tracked: a worktree's links to the main checkout's .bootstrap/ and tools/ once
got committed, and merging them replaced the real folders with links to themselves."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_git_tracks_no_symlink() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    links = [line.split("\t", 1)[1] for line in listed.splitlines() if line.startswith("120000")]
    assert links == []
