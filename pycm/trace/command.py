"""``pycm trace``: the event registry and recordings, from the command line.

- ``pycm trace kinds`` lists every kind (wire name, role, class); ``--markdown`` prints the text
  of docs/events.md (``make events-doc`` writes it).
- ``pycm trace schema`` prints docs/state.md, the state snapshot's fields (``make state-doc``
  writes it).
- ``pycm trace cat FILE [--kind K ...] [--rotated]`` prints a recording one event a line: time
  (UTC), instance, kind and the attributes that differ from their defaults. ``K`` is a wire name
  or a shell-style pattern (``lease.*``). Lines that are not events are reported on stderr with
  their line numbers and skipped; a missing or unreadable file, or one with no event among its
  lines, exits 1.

Standard library only (argparse): this module must stay importable without the TUI or web
dependencies, because :mod:`pycm.cli` imports it for every command.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
from typing import Any, TextIO

from pycm.trace.eventdoc import documented_kinds, render_markdown
from pycm.trace.format import format_event, kind_of
from pycm.trace.recorder import BadLine, no_events_in, read_events

__all__ = ["add_subcommand", "format_event", "kinds_text"]


def add_subcommand(subparsers: Any) -> None:
    """Register ``pycm trace`` and its subcommands on the ``pycm`` parser."""
    trace = subparsers.add_parser("trace", help="inspect event kinds and trace recordings")
    trace.set_defaults(func=lambda _: _usage(trace))
    commands = trace.add_subparsers(title="trace commands", metavar="COMMAND")

    kinds = commands.add_parser("kinds", help="list every event kind")
    kinds.add_argument(
        "--markdown", action="store_true", help="print the full reference (docs/events.md)"
    )
    kinds.set_defaults(func=_kinds)

    schema = commands.add_parser(
        "schema", help="print the state snapshot's reference (docs/state.md)"
    )
    schema.set_defaults(func=_schema)

    cat = commands.add_parser("cat", help="print a recording (--trace-file), one event a line")
    cat.add_argument("file", metavar="FILE", help="a JSON-lines recording")
    cat.add_argument(
        "--kind",
        action="append",
        default=[],
        metavar="K",
        help="only events of this kind (a wire name or a pattern such as 'lease.*'); repeatable",
    )
    cat.add_argument(
        "--rotated",
        action="store_true",
        help="also read the rotated files FILE.N … FILE.1 first (oldest first)",
    )
    cat.set_defaults(func=_cat)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def kinds_text() -> str:
    """One line per kind, sorted by wire name: name, role, class."""
    infos = sorted(documented_kinds(), key=lambda i: i.kind)
    width = max((len(i.kind) for i in infos), default=0)
    return "".join(f"{i.kind:<{width}}  {i.role:<5}  {i.cls.__name__}\n" for i in infos)


def _kinds(args: argparse.Namespace) -> int:
    sys.stdout.write(render_markdown() if args.markdown else kinds_text())
    return 0


def _schema(args: argparse.Namespace) -> int:
    from pycm.trace.state.doc import render_markdown as render_state

    sys.stdout.write(render_state())
    return 0


def _cat(args: argparse.Namespace) -> int:
    patterns: list[str] = args.kind
    path: str = args.file
    bad_lines = events = 0

    def report(bad: BadLine) -> None:
        nonlocal bad_lines
        bad_lines += 1
        what = "truncated last line" if bad.truncated else "bad line"
        sys.stderr.write(f"pycm trace cat: {bad.path}:{bad.line}: {what}: {bad.error}\n")

    out: TextIO = sys.stdout
    try:
        for event in read_events(path, rotated=args.rotated, on_bad_line=report):
            events += 1
            kind = kind_of(event)
            if patterns and not any(fnmatch.fnmatchcase(kind, p) for p in patterns):
                continue
            out.write(format_event(event) + "\n")
        out.flush()
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            return _stdout_closed()
        reason = exc.strerror or str(exc)
        sys.stderr.write(f"pycm trace cat: cannot read {exc.filename or path}: {reason}\n")
        return 1
    if bad_lines and not events:
        # Not a damaged recording but something else: say so, and fail as for a missing file.
        sys.stderr.write(f"pycm trace cat: {path}: {no_events_in(bad_lines)}\n")
        return 1
    if bad_lines:
        sys.stderr.write(f"pycm trace cat: skipped {bad_lines} line(s) that are not events\n")
    return 0


def _stdout_closed() -> int:
    """The reader went away (``| head``): not an error; keep Python from complaining at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 0
