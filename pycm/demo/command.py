"""``pycm demo [--duration S] [--no-tui]``: the emulator, three replicas and a workload.

It prints one line per replica (identity, https URL), then a live stream of their
leader-election and start-up events, one line each, and the workload's rollout. Ctrl-C (or
SIGTERM) stops everything cleanly. With ``--duration`` it stops by itself after S seconds.
Exit statuses: 0 when a leader was elected and no child exited unexpectedly; 1 otherwise (the
reasons printed, one line each); 2 for bad flags; 130 never (Ctrl-C is the normal way out).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from pycm.demo.orchestrator import DemoOptions, Orchestrator

__all__ = ["add_subcommand", "run"]


def _seconds(text: str) -> float:
    try:
        value = float(text.removesuffix("s"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: want seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--duration must be positive, got {text!r}")
    return value


def add_subcommand(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the embedded demo (emulator + managers)",
        description="Start the embedded Kubernetes API emulator and three pycm run replicas "
        "with leader election, stream their leader-election and start-up events, and roll "
        "out a small workload. Ctrl-C stops everything.",
    )
    parser.add_argument(
        "--duration",
        type=_seconds,
        default=None,
        metavar="S",
        help="stop after S seconds; the exit status says whether everything behaved",
    )
    parser.add_argument(
        "--no-tui",
        action="store_true",
        help="print the plain event stream (today the only mode; the TUI comes later)",
    )
    parser.set_defaults(func=run)


def _print(line: str) -> None:
    print(line, flush=True)


def run(args: argparse.Namespace) -> int:
    options = DemoOptions(duration=args.duration)
    try:
        return asyncio.run(_run(options))
    except KeyboardInterrupt:  # a second Ctrl-C during the stop
        return 130


async def _run(options: DemoOptions) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        verdict = await Orchestrator(options, _print).run(stop)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    if verdict.ok:
        _print(f"pycm demo: ok: leader(s) elected: {', '.join(verdict.leaders)}")
        return 0
    for problem in verdict.problems:
        sys.stderr.write(f"pycm demo: failed: {problem}\n")
    return 1
