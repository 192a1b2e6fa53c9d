"""The ``pycm`` command.

Subcommands register themselves here, one module each, through an ``add_subcommand(subparsers)``
function that sets ``func`` (taking the parsed namespace, returning the exit status). This module
is the only place that imports ``tui`` and ``web``, and it wires them in explicitly: what a
command needs of them (the demo's viewers, the dashboard ``pycm run`` mounts) is an argument of
its ``add_subcommand``, never a module global set from here.

Exit statuses: 0 success, 1 runtime failure, 2 usage error (argparse's convention and cobra's).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from pycm import __version__

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse with cobra's usage-error shape: the error, the usage line, a pointer to --help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"Error: {message}\n")
        self.print_usage(sys.stderr)
        sys.stderr.write(f"Run '{self.prog} --help' for usage.\n")
        raise SystemExit(2)


def _launch_top(
    replicas: Sequence[tuple[str, str, str]],
    token: str,
    controls: Sequence[tuple[str, str, Any]],
    stop: Any,
) -> Any:
    """``pycm top`` for ``pycm demo``: SSE sources for its replicas (TLS verified against each
    replica's own certificate), the chaos controls as keys. Imports the TUI only when used."""
    import ssl

    from tui.actions import Action
    from tui.app import run_top_async
    from tui.sources import SseSource

    sources = [
        SseSource(url, token=token, verify=ssl.create_default_context(cafile=ca), name=name)
        for name, url, ca in replicas
    ]
    actions = [Action(key, description, run) for key, description, run in controls]
    return run_top_async(sources, stop=stop, actions=actions)


async def _launch_dashboard(
    replicas: Sequence[tuple[str, str, str, Any]], token: str, **options: Any
) -> int:
    """The web dashboard of ``pycm demo``'s replicas (see
    :data:`pycm.demo.command.DashboardLauncher`). Imports the web app only when used."""
    from web.server import serve_replicas

    return await serve_replicas(replicas, token, **options)


def _mount_dashboard(**lent: Any) -> Any:
    """The web dashboard ``pycm run`` mounts on its secure port (see
    :data:`pycm.server.dashboard_door.DashboardMounter`). Imports the web app only when used."""
    from web.mount import live_dashboard

    return live_dashboard(**lent)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pycm",
        description="pycm: a controller manager built the way kube-controller-manager is built, "
        "and built to be watched.",
    )
    parser.add_argument("--version", action="version", version=f"pycm {__version__}")
    subparsers = parser.add_subparsers(
        title="commands", metavar="COMMAND", parser_class=_Parser, dest="command"
    )

    version = subparsers.add_parser("version", help="print the version")
    version.set_defaults(func=lambda _: print(f"pycm {__version__}") or 0)

    from pycm.demo import command as demo_command

    demo_command.add_subcommand(
        subparsers, demo_command.Viewers(tui=_launch_top, dashboard=_launch_dashboard)
    )

    from pycm.trace import command as trace_command

    trace_command.add_subcommand(subparsers)

    from pycm.trace import why_command

    why_command.add_subcommand(subparsers)

    from pycm.sim import command as sim_command

    sim_command.add_subcommand(subparsers)

    from pycm.app import command as run_command

    run_command.add_subcommand(subparsers, dashboard_mounter=_mount_dashboard)

    from pycm.leaderelection import watch as lease_command

    lease_command.add_subcommand(subparsers)

    from tui import command as top_command

    top_command.add_subcommand(subparsers)

    from web import command as dashboard_command

    dashboard_command.add_subcommand(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        status = func(args)
    except KeyboardInterrupt:
        return 130
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    raise SystemExit(main())
