"""A project-local kubectl for the emulator's kubectl tests (imported by tests/sim/kubectl/).

``kubectl`` (session-scoped) is ``tools/kubectl/usr/bin/kubectl`` from Debian's
``kubernetes-client`` package: when it is missing, ``apt-get download kubernetes-client`` into
``tools/kubectl/`` (git-ignored), running ``apt-get update`` once if nothing was found, then
``dpkg -x``. If it still cannot be had, the tests FAIL with the reason: they are never skipped,
and the machine's /usr/bin/kubectl is never used. ``tests/system-deps.sh`` (``make test``)
does the same up front.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools" / "kubectl"
KUBECTL = TOOLS / "usr" / "bin" / "kubectl"
_APT_TIMEOUT = 300


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=TOOLS, capture_output=True, text=True, timeout=_APT_TIMEOUT, check=False
    )


def _debs() -> list[Path]:
    return sorted(TOOLS.glob("kubernetes-client_*.deb"), key=lambda p: p.stat().st_mtime)


def fetch_kubectl() -> Path:
    """The local kubectl, downloaded and extracted when missing (pytest.fail if impossible)."""
    if KUBECTL.is_file():
        return KUBECTL
    TOOLS.mkdir(parents=True, exist_ok=True)
    try:
        download = _run(["apt-get", "download", "kubernetes-client"])
        if download.returncode != 0 or not _debs():
            update = _run(["apt-get", "update", "-qq"])
            download = _run(["apt-get", "download", "kubernetes-client"])
            if download.returncode != 0 or not _debs():
                pytest.fail(
                    "cannot get kubectl: `apt-get download kubernetes-client` failed after "
                    f"`apt-get update` (exit {update.returncode}: {update.stderr.strip()}): "
                    f"{download.stderr.strip()}",
                    pytrace=False,
                )
        deb = _debs()[-1]
        extract = _run(["dpkg", "-x", str(deb), str(TOOLS)])
    except (OSError, subprocess.TimeoutExpired) as err:
        pytest.fail(f"cannot get kubectl with apt-get/dpkg: {err}", pytrace=False)
    if extract.returncode != 0 or not KUBECTL.is_file():
        pytest.fail(
            f"cannot get kubectl: `dpkg -x {deb.name}` gave no usr/bin/kubectl: "
            f"{extract.stderr.strip()}",
            pytrace=False,
        )
    return KUBECTL


@pytest.fixture(scope="session")
def kubectl() -> Path:
    return fetch_kubectl()
