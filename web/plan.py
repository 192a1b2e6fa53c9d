"""What ``pycm dashboard``'s flags ask for, checked: the plan :func:`web.server.serve` runs.

Its own module so that the argparse side (:mod:`web.command`, which builds a plan) and the
serving side (:mod:`web.server`, which runs one) both import it and neither imports the other.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from web.hub import DashboardConfig

__all__ = ["DashboardPlan"]


@dataclass
class DashboardPlan:
    """What the flags ask for, checked."""

    mode: str  # "fanin" or "replay"
    host: str
    port: int
    config: DashboardConfig
    # (source name, URL, the CA file of that server's certificate or "" for ``verify``)
    servers: list[tuple[str, str, str]] = field(default_factory=list)
    token: str = ""
    token_file: str = ""
    client_cert: tuple[str, str] | None = None
    verify: ssl.SSLContext | bool = True
    replay: str = ""
    speed: float = 1.0
