"""The plugin install command docs/controllers.md gives works as written on a machine set up
by `make env`: uv from .bootstrap/bin, offline, no build isolation — run here from the
repository's root against a fresh environment (the lock's packages, pycm from a wheel) in
place of .venv, so pycm's own environment gets no plugin."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "controllers.md"


def _documented_install() -> list[str]:
    text = DOC.read_text()
    block = re.search(r"```sh\n(\.bootstrap/bin/uv pip install[^`]*?)\n```", text)
    assert block is not None, "docs/controllers.md lost its install command"
    return shlex.split(block.group(1).replace("\\\n", " "))


def _run(argv: list[str], cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=180, env={**clean, **env}
    )


def test_documented_install_command_installs_the_plugin_offline(tmp_path: Path) -> None:
    argv = _documented_install()
    assert argv[:3] == [".bootstrap/bin/uv", "pip", "install"]
    assert "--offline" in argv and ".venv/bin/python" in argv
    env = tmp_path / "env"
    synced = _run(
        [argv[0], "sync", "--frozen", "--offline", "--no-install-project", "-q"],
        UV_PROJECT_ENVIRONMENT=str(env),
    )
    assert synced.returncode == 0, synced.stderr
    wheel = _run(
        [
            argv[0],
            "build",
            "--wheel",
            "--offline",
            "--no-build-isolation",
            "--python",
            sys.executable,
            "-o",
            str(tmp_path / "dist"),
            ".",
        ]
    )
    assert wheel.returncode == 0, wheel.stderr
    (built,) = (tmp_path / "dist").glob("pycm-*.whl")
    python = str(env / "bin" / "python")
    pycm = _run(
        [argv[0], "pip", "install", "--offline", "--no-deps", "--python", python, str(built)]
    )
    assert pycm.returncode == 0, pycm.stderr
    # The documented command, as written, with the fresh environment for .venv's python.
    installed = _run([python if a == ".venv/bin/python" else a for a in argv])
    assert installed.returncode == 0, installed.stderr
    listed = _run([python, "-m", "pycm", "run", "--help"], cwd=tmp_path)  # pycm: the wheel's
    assert listed.returncode == 0, listed.stderr
    assert "Plugin controllers: echo from distribution pycm-echo-controller 0.1.0" in listed.stdout
