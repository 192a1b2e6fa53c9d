"""``pycm run``: parse and validate the flags, build the completed config, hand it to the runner.

The command is cobra's as KCM sets it up: named flag sections in help (``--help`` prints them
to stdout, exit 0), and a usage error that lists every problem at once on stderr — one
``Error: …`` line each, then the usage line and ``Run 'pycm run --help' for usage.`` — with exit
status 2. Flags follow pflag's rules (:mod:`pycm.app.options.flagset`), so the ``run`` parser
that :func:`add_subcommand` registers on ``pycm`` passes its arguments through untouched.

After validation the command emits one :class:`~pycm.trace.kinds.FlagsParsed` event (the
non-default values, secrets withheld) and calls the runner with the
:class:`~pycm.app.config.CompletedConfig`:

1. the one given to :func:`run` (tests);
2. else ``run_manager`` in :mod:`pycm.app.run`, imported on first use, called with the
   dashboard mounter ``pycm.cli`` hands :func:`add_subcommand` (it wires its parts explicitly:
   nothing is installed in a module global);
3. else none exists yet: ``pycm run`` says so in one line and exits 1.

The runner's return value is the exit status.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from pycm import __version__
from pycm.app.config import CompletedConfig
from pycm.app.options import ControllerManagerOptions, KnownControllers, render_help
from pycm.app.options.flagset import BOOL
from pycm.server.dashboard_door import DashboardMounter
from pycm.trace import Bus, default_bus
from pycm.trace.kinds import FlagsParsed

__all__ = ["LONG", "USE_LINE", "Runner", "add_subcommand", "run"]

Runner = Callable[[CompletedConfig], int]
"""Starts the manager with the completed config and returns the exit status."""

USE_LINE = "pycm run [flags]"
LONG = (
    "Run the pycm controller manager: connect to the cluster that --kubeconfig (or --master, "
    "or the in-cluster configuration) names, serve health checks and metrics, take part in "
    "leader election, and while leading run the enabled controllers. Every step it takes is "
    "a trace event, for 'pycm top', the web dashboard, --trace-file and OpenTelemetry."
)
NOT_LANDED = "pycm run: the manager start-up has not landed yet"
_RUNNER_MODULE = "pycm.app.run"


def _find_runner(dashboard_mounter: DashboardMounter | None) -> Runner | str | None:
    """``pycm.app.run:run_manager`` with the dashboard mounter; None when it does not exist
    yet; a message when the module exists but cannot be imported."""
    try:
        module = importlib.import_module(_RUNNER_MODULE)
    except ModuleNotFoundError as err:
        if err.name == _RUNNER_MODULE:
            return None
        return f"pycm run: cannot load the manager start-up: {err}"
    except ImportError as err:
        return f"pycm run: cannot load the manager start-up: {err}"
    found: Callable[..., int] | None = getattr(module, "run_manager", None)
    if found is None:
        return None
    return functools.partial(found, dashboard_mounter=dashboard_mounter)


@dataclass
class _CommandOptions:
    """Cobra's own flags on the command."""

    help: bool = False
    version: bool = False


def _columns(out: TextIO) -> int:
    """The terminal width to wrap help to; 0 (no wrapping) when not writing to a terminal."""
    isatty = getattr(out, "isatty", None)
    if isatty is not None and isatty():
        return shutil.get_terminal_size().columns
    return 0


def run(
    argv: Sequence[str],
    *,
    bus: Bus | None = None,
    known_controllers: KnownControllers | None = None,
    runner: Runner | None = None,
    dashboard_mounter: DashboardMounter | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``pycm run`` with ``argv`` (the arguments after ``run``); returns the exit status.
    ``runner`` replaces the manager (tests); ``dashboard_mounter`` is handed to it."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    if known_controllers is None:
        # The registry is built here, before the flags are parsed: the built-ins, controllers
        # registered in code, and the plugins (a broken plugin is kept aside: see below); a
        # collision among controllers registered in code is a usage error.
        from pycm.app.controllers import build_registry
        from pycm.app.registry import RegistryError

        try:
            known_controllers = build_registry()
        except RegistryError as exc:
            err.write(f"Error: {exc}\n")
            if not _asks_for_help_or_version(argv):
                return 2
            # Help and the version are still given, without the plugins' controllers: a
            # broken plugin must not keep a user from reading how to run without it.
            err.write("(the help below lists no plugin controller)\n")
            known_controllers = build_registry(plugins=False)
    options = ControllerManagerOptions(known_controllers)
    command = _CommandOptions()
    global_flags = options.flag_sets.flag_set("Global")
    global_flags.add(command, "help", "help", BOOL, "help for run", shorthand="h")
    global_flags.add(command, "version", "version", BOOL, "Print the version and exit.")

    errors = options.parse(list(argv))
    err.writelines(f"{warning}\n" for warning in options.warnings)  # deprecated flags used
    if command.help:
        out.write(render_help(LONG, USE_LINE, options.flag_sets, _columns(out)))
        return 0
    if command.version and not errors:
        out.write(f"pycm {__version__}\n")
        return 0
    errors.extend(options.validate())
    if errors:
        err.writelines(f"Error: {error}\n" for error in errors)
        err.write(f"Usage: {USE_LINE}\nRun 'pycm run --help' for usage.\n")
        return 2
    # Plugins fail alone: one that did not load and that --controllers does not name is one
    # warning, and the rest runs (one it names is a validation error above).
    left_out = known_controllers.warnings(options.controllers.controllers)
    err.writelines(f"Warning: {line}\n" for line in left_out)

    completed = options.config(exclude=frozenset({"help", "version"})).complete()
    changed = sorted(completed.changed.items())
    (bus if bus is not None else default_bus()).emit(
        FlagsParsed(
            command="run",
            changed=",".join(f"{name}={value}" for name, value in changed),
            changed_count=len(changed),
            config_file=completed.misc.config_file,
        )
    )

    start = runner if runner is not None else _find_runner(dashboard_mounter)
    if start is None:
        err.write(f"{NOT_LANDED}\n")
        return 1
    if isinstance(start, str):
        err.write(f"{start}\n")
        return 1
    return int(start(completed))


def _asks_for_help_or_version(argv: Sequence[str]) -> bool:
    """Whether ``argv`` has -h, --help or --version (pflag's spellings, ``=true`` too; not
    after a ``--``)."""
    for arg in argv:
        if arg == "--":
            return False
        name, _, value = arg.partition("=")
        if name in ("-h", "--help", "--version") and value.lower() in ("", "true", "1", "t"):
            return True
    return False


def add_subcommand(subparsers: Any, *, dashboard_mounter: DashboardMounter | None = None) -> None:
    """Register ``pycm run`` on the ``pycm`` parser; the manager it starts mounts the web
    dashboard ``dashboard_mounter`` builds (none without one).

    The subparser only collects the arguments: ``prefix_chars`` is NUL, which no command-line
    argument can contain, so argparse treats every argument (``--help`` too) as one of the
    REMAINDER and :func:`run` parses them all with pflag's rules.
    """
    parser = subparsers.add_parser(
        "run",
        help="run the controller manager",
        description=LONG,
        add_help=False,
        prefix_chars="\0",
    )
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    parser.set_defaults(
        func=lambda namespace: run(namespace.argv, dashboard_mounter=dashboard_mounter)
    )
