"""A free TCP port for a child process to listen on, chosen where nothing else will take it.

The usual "bind port 0, read the port, close" hands out a port from the kernel's ephemeral
range, and until the child binds it any outgoing connection on the machine may take the same
port as its local end (the kernel picks local ports from that range too). Under load (a test
suite opening thousands of connections) that race is lost often enough to fail a start with
"Address already in use". Ports below the ephemeral range are never handed out implicitly, so
a port chosen there and found free stays free unless another explicit picker chooses the same
one; a random choice among ~20,000 makes that a one-in-thousands event per pair of pickers.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["free_port"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
# Below this are the well-known and registered ports services commonly listen on.
_LOWEST = 10000
# Fewer candidate ports than this make random collisions likely; fall back to the kernel.
_MIN_CANDIDATES = 2000
_ATTEMPTS = 64
_pick = random.Random()


def _ephemeral_low() -> int | None:
    try:
        low, _high = _RANGE_FILE.read_text().split()
        return int(low)
    except (OSError, ValueError):
        return None


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that is free now and that the kernel will not give to another socket
    (below its ephemeral range when the system says where that is; the kernel's pick else)."""
    low = _ephemeral_low()
    if low is not None and low - _LOWEST >= _MIN_CANDIDATES:
        for _ in range(_ATTEMPTS):
            port = _pick.randrange(_LOWEST, low)
            if _bindable(host, port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
