"""``pycm top``: the terminal UI, attached to managers (``--server``, repeatable) or a recording.

Exit statuses: 0 when the user quits, 2 for bad input (one error line, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import urlsplit

from pycm.trace import credentials
from pycm.trace.credentials import CredentialsError
from pycm.trace.recorder import recording_problem
from tui.sources import ReplaySource, Source, SseSource

__all__ = ["add_subcommand", "build_sources"]

DESCRIPTION = """\
Watch pycm managers live: who leads, informers, queues, reconcile latency, errors.
Attach to one or more managers' secure port (--server, repeatable: several replicas in one
view) or play a --trace-file recording (--replay). Keys: ? help, tab next view, / filter,
enter drill in, esc back, p pause, q quit."""


def add_subcommand(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "top",
        help="the terminal UI: watch managers live, or replay a recording",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = parser.add_argument_group("sources")
    src.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="URL",
        help="a manager's secure serving URL, e.g. https://127.0.0.1:10257 (repeatable)",
    )
    src.add_argument("--replay", metavar="FILE", help="play a --trace-file recording")
    src.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="replay speed factor (0 = as fast as possible; default 1)",
    )
    credentials.add_flags(parser)
    parser.set_defaults(func=_run)


def _fail(message: str) -> int:
    # One line whatever the message holds (a YAML parser's error spans several).
    sys.stderr.write("Error: " + " ".join(message.split()) + "\n")
    return 2


def build_sources(args: argparse.Namespace) -> list[Source]:
    """The sources the flags describe; raises ValueError (one line) for bad input."""
    if not args.server and not args.replay:
        raise ValueError("give --server URL (repeatable) or --replay FILE")
    if args.speed < 0 or args.speed != args.speed:
        raise ValueError(f"--speed must be >= 0, not {args.speed}")
    sources: list[Source] = []
    if args.server:
        seen: set[str] = set()
        for url in args.server:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"--server {url!r}: want http(s)://host:port")
            if url in seen:
                raise ValueError(f"--server {url} given twice")
            seen.add(url)
        creds = credentials.from_flags(args)
        verify = creds.verify()
        sources += [
            SseSource(
                url,
                token=creds.token,
                token_file=creds.token_file or None,
                client_cert=creds.client_cert,
                verify=verify,
            )
            for url in args.server
        ]
    if args.replay:
        problem = recording_problem(args.replay)
        if problem is not None:
            raise ValueError(f"--replay {args.replay}: {problem}")
        sources.append(ReplaySource(args.replay, speed=args.speed or float("inf")))
    return sources


def _run(args: argparse.Namespace) -> int:
    try:
        sources = build_sources(args)
    except (CredentialsError, ValueError) as exc:
        return _fail(str(exc))
    # Here, not at the top: `pycm --help` and `pycm run` need not load Textual.
    from tui.app import run_top

    return run_top(sources)
