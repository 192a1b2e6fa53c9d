"""``pycm dashboard``: the web dashboard on its own, for several replicas or a recording.

- Fan-in: ``--server URL`` (repeatable) connects to each manager's ``/debug/pycm/events`` with
  the given credentials (:class:`pycm.trace.stream.StreamClient`: resume with ``since=``,
  backoff, lag notices); each replica is a source of its own, labelled ``host:port``.
- Replay: ``--replay FILE [--speed X]`` plays a ``--trace-file`` recording, with play, pause,
  seek and speed from the page.

It serves plain HTTP on a loopback address (``--listen``, default ``127.0.0.1:8080``); ``/``
redirects to ``/dashboard/``. It prints ``pycm dashboard: serving <login URL>``, a one-time
URL whose code is exchanged for a session cookie. Whoever holds the bearer token the dashboard
itself uses may also log in with it. Exit statuses: 0 on SIGINT/SIGTERM, 1 when serving fails,
2 for bad flags or files (one line, no traceback).
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import sys
from typing import Any
from urllib.parse import SplitResult, urlsplit

from pycm.trace import credentials
from pycm.trace.recorder import recording_problem
from pycm.util.durations import duration_arg
from web.hub import DashboardConfig
from web.plan import DashboardPlan

__all__ = ["add_subcommand", "plan_from"]

DEFAULT_LISTEN = "127.0.0.1:8080"


def add_subcommand(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        help="the web dashboard: several managers at once, or a recording",
        description="Serve the web dashboard for one or more managers (--server, repeatable: "
        "each replica side by side) or for a --trace-file recording (--replay). Prints a "
        "one-time login URL.",
    )
    src = parser.add_argument_group("sources")
    src.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="URL",
        help="a manager's secure serving URL, e.g. https://127.0.0.1:10257 (repeatable)",
    )
    src.add_argument("--replay", metavar="FILE", help="serve a --trace-file recording instead")
    src.add_argument("--speed", type=float, default=1.0, help="replay speed factor (default 1)")
    credentials.add_flags(parser)
    serving = parser.add_argument_group("serving")
    serving.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"loopback address to serve on (default {DEFAULT_LISTEN}; port 0 picks one)",
    )
    serving.add_argument(
        "--jaeger-url", default="", metavar="URL", help="link trace ids to this Jaeger UI"
    )
    # (The lease gauge's timings come from the trace: lease.election_configured.)
    page = parser.add_argument_group("the page's marks")
    page.add_argument(
        "--slow-reconcile",
        dest="slow_reconcile",
        type=duration_arg,
        default=1.0,
        metavar="DURATION",
        help="a reconcile this slow is marked on the incident timeline (default 1s)",
    )
    parser.set_defaults(func=_run)


def _http_url(flag: str, text: str, want: str) -> SplitResult:
    """``text`` split as an http(s) URL with a host, or ValueError naming the flag."""
    try:
        parts = urlsplit(text)
        _ = parts.port  # a port that is not a number, or out of range, raises here
    except ValueError as exc:
        raise ValueError(f"{flag} {text!r}: want {want} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in text):
        raise ValueError(f"{flag} {text!r}: want {want}")
    return parts


def _listen(text: str) -> tuple[str, int]:
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"--listen {text!r}: want HOST:PORT, e.g. {DEFAULT_LISTEN}")
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        # Plain HTTP, with a login that lends a session: never beyond this machine.
        raise ValueError(f"--listen {text!r}: the dashboard serves loopback addresses only")
    return host, int(port_text)


def plan_from(args: argparse.Namespace) -> DashboardPlan:
    """The checked plan of the flags; ValueError (one line) for bad input."""
    if bool(args.server) == bool(args.replay):
        raise ValueError("give --server URL (repeatable) or --replay FILE, not both")
    host, port = _listen(args.listen)
    if args.slow_reconcile <= 0:
        raise ValueError("--slow-reconcile must be positive")
    jaeger = args.jaeger_url.rstrip("/") or None
    if jaeger is not None:
        _http_url("--jaeger-url", args.jaeger_url, "http(s)://host:port")
    config = DashboardConfig(
        jaeger_url=jaeger,
        slow_reconcile_ms=float(args.slow_reconcile) * 1000.0,
    )
    if args.replay:
        if not args.speed > 0:
            raise ValueError(f"--speed must be > 0, not {args.speed}")
        problem = recording_problem(args.replay)
        if problem is not None:
            raise ValueError(f"--replay {args.replay}: {problem}")
        return DashboardPlan(
            "replay", host, port, config, replay=args.replay, speed=float(args.speed)
        )
    plan = DashboardPlan("fanin", host, port, config)
    names: set[str] = set()
    for url in args.server:
        name = _http_url("--server", url, "https://host:port").netloc
        if name in names:
            raise ValueError(f"--server {url} given twice")
        names.add(name)
        plan.servers.append((name, url.rstrip("/"), ""))
    creds = credentials.from_flags(args)
    plan.token, plan.token_file = creds.token, creds.token_file
    plan.client_cert, plan.verify = creds.client_cert, creds.verify()
    return plan


def _fail(message: str) -> int:
    sys.stderr.write(f"pycm dashboard: {message}\n")
    return 2


def _run(args: argparse.Namespace) -> int:
    # Here, not at the top: `pycm --help` and the other commands need not load the server.
    from pycm.trace.replay import load_recording
    from web.server import serve

    events = None
    try:
        plan = plan_from(args)
        if plan.replay:
            events, bad_lines = load_recording(plan.replay)
            if bad_lines:
                sys.stderr.write(
                    f"pycm dashboard: --replay {plan.replay}: skipped {bad_lines} line(s) that "
                    "are not events\n"
                )
    except OSError as exc:
        return _fail(f"cannot read {exc.filename or args.replay}: {exc.strerror or exc}")
    except ValueError as exc:
        return _fail(str(exc))
    try:
        return asyncio.run(serve(plan, events=events))
    except KeyboardInterrupt:
        return 130
