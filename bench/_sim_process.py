"""``pycm sim`` as a process of its own (plain HTTP, no kubelet) for the benchmarks that run
``pycm run`` processes against it: its URL, token and kubeconfig, read from its one ``serving``
line and the kubeconfig it writes."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

__all__ = ["SimProcess", "start_sim"]

_LINE = re.compile(r"pycm sim: serving (\S+) \(kubeconfig: (.+)\)")


@dataclass
class SimProcess:
    process: subprocess.Popen[str]
    url: str
    token: str
    kubeconfig: str

    def client(self, timeout: float) -> httpx.Client:
        """A client of its API as its admin (the bench's writes and reads)."""
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)


def start_sim(kubeconfig: Path, *flags: str) -> SimProcess:
    """Start the emulator (``flags`` after the defaults); raise when it does not serve."""
    argv = [sys.executable, "-m", "pycm", "sim", "--port", "0", "--tls=false", "--kubelet=off"]
    process = subprocess.Popen(
        [*argv, *flags, "--kubeconfig-out", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    match = _LINE.search(process.stdout.readline())
    if not match:
        process.kill()
        process.wait()
        raise RuntimeError("the emulator did not start")
    doc = yaml.safe_load(kubeconfig.read_text())
    return SimProcess(
        process, match.group(1), str(doc["users"][0]["user"]["token"]), str(kubeconfig)
    )
