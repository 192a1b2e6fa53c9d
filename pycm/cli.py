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
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from pycm import __version__

__all__ = ["entry", "main"]


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


def _add_demo(subparsers: Any) -> None:
    from pycm.demo import command

    command.add_subcommand(
        subparsers, command.Viewers(tui=_launch_top, dashboard=_launch_dashboard)
    )


def _add_trace(subparsers: Any) -> None:
    from pycm.trace import command

    command.add_subcommand(subparsers)


def _add_why(subparsers: Any) -> None:
    from pycm.trace import why_command

    why_command.add_subcommand(subparsers)


def _add_sim(subparsers: Any) -> None:
    from pycm.sim import command

    command.add_subcommand(subparsers)


def _add_run(subparsers: Any) -> None:
    from pycm.app import command

    command.add_subcommand(subparsers, dashboard_mounter=_mount_dashboard)


def _add_lease(subparsers: Any) -> None:
    from pycm.leaderelection import watch

    watch.add_subcommand(subparsers)


def _add_top(subparsers: Any) -> None:
    from tui import command

    command.add_subcommand(subparsers)


def _add_dashboard(subparsers: Any) -> None:
    from web import command

    command.add_subcommand(subparsers)


# Every subcommand, in the order ``pycm --help`` lists them: its one-line help and the function
# that imports its module and registers it. A command line imports only the module of the command
# it names (a `pycm top` need not load the manager, a `pycm run --help` not textual): the others
# are listed by name and help alone. tests/cli/test_lazy_dispatch.py keeps each help line equal
# to the one its module registers.
_COMMANDS: dict[str, tuple[str, Callable[[Any], None]]] = {
    "demo": ("run the embedded demo (emulator + managers)", _add_demo),
    "trace": ("inspect event kinds and trace recordings", _add_trace),
    "why": ("why an object was reconciled: its chain of causes and history", _add_why),
    "sim": ("serve the embedded Kubernetes API emulator", _add_sim),
    "run": ("run the controller manager", _add_run),
    "lease": ("observe leader-election Leases", _add_lease),
    "top": ("the terminal UI: watch managers live, or replay a recording", _add_top),
    "dashboard": ("the web dashboard: several managers at once, or a recording", _add_dashboard),
}


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand a command line names: its first argument that is not an option (``pycm``'s
    own options, --help and --version, take no value), or None."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in _COMMANDS else None
    return None


def build_parser(only: str | None = None, *, every: bool = True) -> argparse.ArgumentParser:
    """The ``pycm`` parser. By default every subcommand is registered in full; with
    ``every=False`` only ``only`` is (none when it is None), the others by name and help, which
    is all ``pycm --help`` and argparse's "invalid choice" error show of them."""
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

    for name, (help_line, add) in _COMMANDS.items():
        if every or name == only:
            add(subparsers)
        else:
            subparsers.add_parser(name, help=help_line)
    return parser


# What each command's function loads beyond the module that registers it: the process entry
# loads it all up front, with the collector paused (entry()).
_LOADS: dict[str, tuple[str, ...]] = {
    "demo": ("pycm.demo.command",),
    "trace": ("pycm.trace.command",),
    "why": ("pycm.trace.why_command", "pycm.trace.state"),
    "sim": ("pycm.sim.command", "pycm.sim.server", "pycm.sim.heap"),
    "run": ("pycm.app.command", "pycm.app.controllers", "pycm.app.run"),
    "lease": ("pycm.leaderelection.watch",),
    "top": ("tui.command", "tui.app"),
    "dashboard": ("web.command", "web.server", "pycm.trace.replay"),
}
_HELP_OR_VERSION = frozenset({"-h", "--help", "--version"})


def entry() -> int:
    """The ``pycm`` process (the console script, ``python -m pycm``): :func:`main`, once the
    chosen command's modules are loaded with the cyclic garbage collector off and what they
    made is frozen out of later collections.

    Why: loading ``pycm run``'s ~600 modules leaves ~100k objects that live as long as the
    process, and the collector, counting allocations, ran its collections over them while they
    loaded, finding nothing to free: 57 ms of a start-up's ~1 s of CPU up to its first
    ``/healthz`` answer, 30 ms now (``python -m bench startup``); frozen, no later full
    collection scans them either (the informers freeze their caches for the same reason:
    :mod:`pycm.util.gc_tuning`). A process that asks only for help or the version loads
    nothing extra. Tests call :func:`main`, which leaves the collector alone."""
    argv = sys.argv[1:]
    chosen = chosen_command(argv)
    if chosen is not None and not _HELP_OR_VERSION.intersection(argv):
        _load_frozen(_LOADS[chosen])
    return main(argv)


def _load_frozen(modules: Sequence[str]) -> None:
    # (Imported here: pycm.util's package loads asyncio, which `pycm --help` does not need.)
    from pycm.util import gc_tuning

    with gc_tuning.gc_paused():
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # main loads it again, and reports the failure as it does
                break
        # Before the pause ends, as the reflector does: re-enabling first would let the next
        # allocation collect all that was just loaded.
        gc_tuning.freeze_survivors()


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(chosen_command(argv), every=False)
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
