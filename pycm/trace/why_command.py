"""``pycm why <resource>/<namespace>/<name>``: why an object was reconciled or written, from live
managers (``--server``, repeatable; the viewers' credential flags, :mod:`pycm.trace.credentials`)
or a recording (``--replay``).

Prints the object's chain of causes (:mod:`pycm.trace.why`), one cause a line, each indented
under the one it explains, then the steps that touched it; ``-o json`` prints the
:class:`~pycm.trace.why.ObjectReport` (docs/state.md, "ObjectReport"). Live, each manager
answers ``GET /debug/pycm/objects/...`` from its own state; their reports are merged (steps by
time, the chain that starts latest).

Exit statuses: 0 the object has a history; 1 no manager (or the recording) has a step of it, or
no manager answered; 2 bad input — a malformed reference, an unknown resource, bad flags, an
unreadable recording (one line on stderr, no traceback).

Standard library and httpx only: :mod:`pycm.cli` imports this module for every command.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from pycm.trace import credentials
from pycm.trace.credentials import Credentials, CredentialsError
from pycm.trace.objref import ObjectRef, RefError, UnknownResource, parse_ref
from pycm.trace.recorder import read_events, recording_problem
from pycm.trace.why import ObjectReport, merge_reports, object_report, render_text

__all__ = ["add_subcommand", "live_reports", "replay_report"]

OBJECTS_PATH = "/debug/pycm/objects"
TIMEOUT_S = 10.0

DESCRIPTION = """\
Why did it run? The chain of causes of an object's newest reconcile (or write), back across
controllers to the outside writer (kubectl-scale, ...), and the steps that touched it: watch
events in, reconciles, writes out, events recorded. REF is resource/namespace/name (kubectl
short names work: deploy/default/web, rs/default/web-6dc5), or resource/name when
cluster-scoped. Exit 0 found, 1 no history of it, 2 bad input."""


class Unknown(Exception):
    """Every answering manager said the resource is unknown."""


def add_subcommand(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "why",
        help="why an object was reconciled: its chain of causes and history",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("ref", metavar="REF", help="resource/namespace/name")
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="text (default) or json"
    )
    parser.add_argument(
        "--no-history", action="store_true", help="print the chain only (text output)"
    )
    src = parser.add_argument_group("sources")
    src.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="URL",
        help="a manager's secure serving URL, e.g. https://127.0.0.1:10257 (repeatable)",
    )
    src.add_argument("--replay", metavar="FILE", help="read a --trace-file recording instead")
    credentials.add_flags(parser)
    parser.set_defaults(func=_run)


def _fail(message: str, status: int = 2) -> int:
    sys.stderr.write("pycm why: " + " ".join(message.split()) + "\n")
    return status


def live_reports(servers: list[str], ref: ObjectRef, creds: Credentials) -> list[ObjectReport]:
    """Each server's report of ``ref`` (a server that did not answer: an empty report naming
    its error). Raises :class:`Unknown` when every answer was "unknown resource"."""
    headers = {"Authorization": f"Bearer {creds.token}"} if creds.token else {}
    reports: list[ObjectReport] = []
    unknown: list[str] = []
    with httpx.Client(verify=creds.tls(), timeout=TIMEOUT_S, headers=headers) as client:
        for server in servers:
            url = f"{server.rstrip('/')}{OBJECTS_PATH}/{ref.path}"
            error = ""
            try:
                response = client.get(url)
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                if response.status_code == 200:
                    try:
                        reports.append(orjson.loads(response.content))
                        continue
                    except orjson.JSONDecodeError:
                        error = "the answer is not JSON"
                else:
                    error = _answer_error(response)
                    if response.status_code == 404 and "unknown resource" in error:
                        unknown.append(error)
            reports.append(_failed(ref, server, error))
    if unknown and len(unknown) == len(servers):
        raise Unknown(unknown[0])
    return reports


def _answer_error(response: httpx.Response) -> str:
    try:
        body = orjson.loads(response.content)
        message = str(body.get("error") or body.get("message") or "")
    except (orjson.JSONDecodeError, AttributeError):
        message = ""
    return f"HTTP {response.status_code}" + (f": {message}" if message else "")


def _failed(ref: ObjectRef, source: str, error: str) -> ObjectReport:
    report = merge_reports(ref, [])
    report["sources"] = [{"source": source, "error": error}]
    return report


def replay_report(path: str, text: str) -> ObjectReport:
    """``text``'s report from the recording at ``path`` (RefError for a bad reference)."""
    from pycm.trace.state import State

    state = State()
    state.apply_all(read_events(path))
    ref = parse_ref(text, known=state.objects.resources())
    return object_report(state, ref, source=path)


def _run(args: argparse.Namespace) -> int:
    if not args.server and not args.replay:
        return _fail("give --server URL (repeatable) or --replay FILE")
    if args.server and args.replay:
        return _fail("give --server or --replay, not both")
    if args.replay:
        problem = recording_problem(args.replay)
        if problem is not None:
            return _fail(f"--replay {args.replay}: {problem}")
        try:
            report = replay_report(args.replay, args.ref)
        except RefError as exc:
            return _fail(str(exc))
        except OSError as exc:
            return _fail(f"--replay {args.replay}: {exc.strerror or exc}")
        return _print(report, args)
    try:
        ref = parse_ref(args.ref)
    except UnknownResource:
        # not built in: a plugin's resource the managers may know; they answer 404 if not
        resource = args.ref.strip().strip("/").split("/")[0].lower()
        try:
            ref = parse_ref(args.ref, known={resource})
        except RefError as exc:
            return _fail(str(exc))
    except RefError as exc:
        return _fail(str(exc))
    seen: set[str] = set()
    for url in args.server:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return _fail(f"--server {url!r}: want http(s)://host:port")
        if url in seen:
            return _fail(f"--server {url} given twice")
        seen.add(url)
    try:
        creds = credentials.from_flags(args)
        reports = live_reports(args.server, ref, creds)
    except CredentialsError as exc:
        return _fail(str(exc))
    except Unknown as exc:
        return _fail(str(exc).removeprefix("HTTP 404: "))
    report = merge_reports(ref, reports)
    if all(s["error"] for s in report["sources"]):
        for s in report["sources"]:
            sys.stderr.write(f"pycm why: {s['source']}: {' '.join(s['error'].split())}\n")
        return 1
    return _print(report, args)


def _print(report: ObjectReport, args: argparse.Namespace) -> int:
    for s in report["sources"]:
        if s["error"]:
            sys.stderr.write(f"pycm why: {s['source']}: {' '.join(s['error'].split())}\n")
    if args.output == "json":
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render_text(report, history=not args.no_history))
    return 0 if report["steps"] else 1
