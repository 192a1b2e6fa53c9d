"""tests/system-deps.sh, the first step of ``make test``: silent when the machine has what the
tests need; where something is missing and cannot be installed (no apt-get, not root), one
message naming the packages and the commands, exit 2, before any test runs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "system-deps.sh"


def test_system_deps_with_everything_present_is_silent() -> None:
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_system_deps_without_apt_get_names_what_to_install_and_exits_2(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    shutil.copy(SCRIPT, project / "tests" / "system-deps.sh")
    # A PATH with the shell's basics but no apt-get, promtool, prometheus or valgrind; no
    # tools/kubectl.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "id", "dpkg", "mktemp", "tail", "dirname"):
        found = shutil.which(tool)
        assert found, tool
        os.symlink(found, bin_dir / tool)
    done = subprocess.run(
        [str(bin_dir / "bash"), "tests/system-deps.sh"],
        cwd=project,
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "cannot install here" in done.stderr
    assert "apt-get install" in done.stderr and "prometheus" in done.stderr
    assert "valgrind" in done.stderr
    assert "apt-get download kubernetes-client" in done.stderr
    assert not (project / "tools").exists()  # nothing was attempted
