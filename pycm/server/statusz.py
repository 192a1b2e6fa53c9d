"""``/statusz`` (KEP-4827, KCM's since 1.32, beta and on by default in 1.36): who is running,
since when, which build, and the other debugging endpoints — as text for people (the layout of
apiserver's ``statuszTextSerializer``) or as ``config.k8s.io`` ``Statusz`` (v1beta1; v1alpha1
deprecated) for tools; see :mod:`pycm.server.zpages` for the negotiation.

The text::

    <blank>
    pycm statusz
    Warning: This endpoint is not meant to be machine parseable, …
    <blank>
    Started: Sun Dec  6 08:13:41 UTC 2026
    Up: 0 hr 05 min 12 sec
    Go version: python3.11.7
    Binary version: 0.1.0
    <emulation version line: none, pycm emulates no KCM version>
    Paths: /configz /debug /flagz /healthz /livez /metrics /readyz

pycm is no Go binary: its "Go version" (``goVersion``) is the Python interpreter's, the field
kept so tools that read KCM's read pycm's. The paths are the first segment of every route the
server has (kube's aggregation), /statusz itself left out as kube leaves it out.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pycm.server.zpages import escape, header, zpage_response

__all__ = ["STATUSZ_PATH", "StatuszInfo", "aggregate_paths", "process_start_time", "statusz_route"]

STATUSZ_PATH = "/statusz"
_NOT_DEBUGGING = frozenset({"/apis", "/api", "/openid", "/openapi", "/.well-known", STATUSZ_PATH})


def aggregate_paths(paths: Iterable[str]) -> list[str]:
    """Each path's first segment, once, sorted (kube's ``aggregatePaths``)."""
    folders = set()
    for path in paths:
        parts = path.split("/")
        if len(parts) < 2 or not parts[1]:
            continue
        folder = "/" + parts[1]
        if folder not in _NOT_DEBUGGING:
            folders.add(folder)
    return sorted(folders)


def process_start_time() -> float:
    """When this process started (Unix seconds): Linux's /proc, else now."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/stat", encoding="ascii") as boot:
            btime = next(int(line.split()[1]) for line in boot if line.startswith("btime"))
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def uptime_text(seconds: int) -> str:
    return f"{seconds // 3600} hr {(seconds // 60) % 60:02d} min {seconds % 60:02d} sec"


class StatuszInfo:
    """What /statusz reports; ``paths`` is read at each request (routes may be added)."""

    def __init__(
        self,
        component: str,
        binary_version: str,
        paths: Callable[[], Iterable[str]],
        *,
        start_time: float | None = None,
        now: Callable[[], float] = time.time,
        runtime_version: str = f"python{platform.python_version()}",
    ) -> None:
        self.component = component
        self.binary_version = binary_version
        self.paths = paths
        self.start_time = process_start_time() if start_time is None else start_time
        self.now = now
        self.runtime_version = runtime_version

    def uptime_seconds(self) -> int:
        return max(0, int(self.now() - self.start_time))

    def text(self, delim: str) -> str:
        started = dt.datetime.fromtimestamp(self.start_time).astimezone()
        # Go's time.UnixDate: "Mon Jan _2 15:04:05 MST 2006" (the day padded with a space).
        started_text = started.strftime(f"%a %b {started.day:>2} %H:%M:%S %Z %Y")
        paths = " ".join(aggregate_paths(self.paths()))
        paths_line = f"Paths{delim} {escape(paths)}" if paths else ""
        return header(self.component, "statusz") + (
            f"\nStarted{delim} {escape(started_text)}"
            f"\nUp{delim} {escape(uptime_text(self.uptime_seconds()))}"
            f"\nGo version{delim} {escape(self.runtime_version)}"
            f"\nBinary version{delim} {escape(self.binary_version)}"
            "\n"  # (the emulation version's line: pycm has none)
            f"\n{paths_line}\n"
        )

    def structured(self, api_version: str) -> Mapping[str, Any]:
        started = dt.datetime.fromtimestamp(self.start_time, tz=dt.UTC)
        return {
            "kind": "Statusz",
            "apiVersion": api_version,
            "metadata": {"name": self.component},
            "startTime": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "uptimeSeconds": self.uptime_seconds(),
            "goVersion": self.runtime_version,
            "binaryVersion": self.binary_version,
            "paths": aggregate_paths(self.paths()),
        }


def statusz_route(info: StatuszInfo, rng: random.Random | None = None) -> Route:
    chooser = rng or random.Random()

    async def handle(request: Request) -> Response:
        return zpage_response(
            request,
            page="statusz",
            kind="Statusz",
            text=info.text,
            structured=info.structured,
            rng=chooser,
        )

    return Route(STATUSZ_PATH, handle, methods=["GET"])
