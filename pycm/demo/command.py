"""``pycm demo [--duration S] [--no-tui]``: the emulator, three replicas and a workload.

On a terminal it opens ``pycm top`` attached to the three replicas, with chaos keys (kill or
pause the leader, lease-update latency, a standby's clock run fast, drop watches, scale or
roll the workload); with ``--no-tui`` (or when the output is not a terminal) it prints one
line per replica (identity, https URL), then a live stream of their leader-election and
start-up events, one line each, and the workload's rollout. Ctrl-C (or SIGTERM) stops
everything cleanly. With ``--duration`` it stops by itself S seconds after a replica acquired
the lease.
Exit statuses: 0 when a leader was elected and no child exited unexpectedly; 1 otherwise (the
reasons printed, one line each); 2 for bad flags; 130 never (Ctrl-C is the normal way out).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import signal
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pycm.demo.chaos import Chaos, wait_for_file
from pycm.demo.orchestrator import DemoOptions, Orchestrator
from pycm.kube import load_config

__all__ = ["DashboardLauncher", "TuiLauncher", "Viewers", "add_subcommand", "run"]

CERT_WAIT = 30.0  # a replica writes its serving certificate within seconds of starting
DASHBOARD_WAIT = 15.0  # the TUI waits this long for the dashboard's URL, to print it first


def _seconds(text: str) -> float:
    try:
        value = float(text.removesuffix("s"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: want seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--duration must be positive, got {text!r}")
    return value


TuiLauncher = Callable[..., Awaitable[int]]
"""``launcher(replicas, token, controls, stop)`` runs ``pycm top`` attached to the
replicas — ``[(identity, url, ca_file)]`` — with the chaos ``controls`` ``[(key, description,
coroutine function)]`` as extra keys, until the user quits or ``stop`` is set."""

DashboardLauncher = Callable[..., Awaitable[int]]
"""``launcher(replicas, token, announce=, stop=)`` serves
the web dashboard of the replicas — ``[(identity, url, ca_file, generation)]``, ``generation()``
the replica's current process generation — on a free loopback port, calls ``announce(login
URL)`` once serving, and returns when ``stop`` is set."""


@dataclass(frozen=True, slots=True)
class Viewers:
    """The viewers the demo opens, handed down by ``pycm.cli`` (the only module that imports
    the TUI and the web app); without one, the demo goes on without it."""

    tui: TuiLauncher | None = None
    dashboard: DashboardLauncher | None = None


def add_subcommand(subparsers: Any, viewers: Viewers | None = None) -> None:
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
        help="stop S seconds after a replica has acquired the lease (start-up is not counted; "
        "it is bounded by 60 s); the exit status says whether everything behaved",
    )
    parser.add_argument(
        "--no-tui",
        action="store_true",
        help="print the plain event stream instead of opening pycm top (the default when "
        "the output is not a terminal)",
    )
    parser.set_defaults(func=functools.partial(run, viewers=viewers or Viewers()))


def _print(line: str) -> None:
    print(line, flush=True)


def run(args: argparse.Namespace, *, viewers: Viewers | None = None) -> int:
    options = DemoOptions(duration=args.duration)
    viewers = viewers or Viewers()
    tui = viewers.tui if not args.no_tui and sys.stdout.isatty() else None
    try:
        if tui is not None:
            return asyncio.run(_run_interactive(options, tui, viewers.dashboard))
        return asyncio.run(_run(options, viewers.dashboard))
    except KeyboardInterrupt:  # a second Ctrl-C during the stop
        return 130


async def _replicas_ready(
    orchestrator: Orchestrator, options: DemoOptions, runner: asyncio.Task[Any]
) -> bool:
    """Wait until every replica was started and wrote its serving certificate."""
    # The orchestrator has no "replicas started" event; this waits a second or two at most.
    while len(orchestrator.replicas) < len(options.replicas) and not runner.done():  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    ready = not runner.done()
    for replica in orchestrator.replicas:
        ready = ready and await wait_for_file(replica.cert_file, CERT_WAIT)
    return ready


async def _dashboard(
    orchestrator: Orchestrator,
    options: DemoOptions,
    runner: asyncio.Task[Any],
    stop: asyncio.Event,
    announce: Callable[[str], None],
    launcher: DashboardLauncher | None,
) -> None:
    """The web dashboard of the replicas, once they are up, until ``stop`` (nothing without a
    launcher). It runs in this process, so its one-time login code is valid here; a dashboard
    that fails says so in one line and the demo goes on."""
    if launcher is None:
        return
    # Not beyond the demo's own end (a replica that died before writing its certificate).
    ready = asyncio.ensure_future(_replicas_ready(orchestrator, options, runner))
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({ready, stopped, runner}, return_when=asyncio.FIRST_COMPLETED)
    for waiter in (ready, stopped):
        waiter.cancel()
    await asyncio.gather(ready, stopped, return_exceptions=True)
    if stop.is_set() or runner.done() or ready.cancelled() or not ready.result():
        return
    try:
        token = (await load_config(str(orchestrator.workdir / "kubeconfig"))).token or ""
        replicas = [
            (r.identity, r.url, str(r.cert_file), _generation(r.child))
            for r in orchestrator.replicas
        ]
        await launcher(
            replicas,
            token,
            announce=announce,
            stop=stop,
        )
    except Exception as exc:  # the dashboard is an extra: the demo itself goes on
        sys.stderr.write(f"pycm demo: the dashboard failed: {exc}\n")


def _generation(child: Any) -> Callable[[], int]:
    return lambda: int(child.generation)


async def _run(options: DemoOptions, dashboard_launcher: DashboardLauncher | None) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    orchestrator = Orchestrator(options, _print)
    runner = asyncio.create_task(orchestrator.run(stop), name="demo")
    dashboard = asyncio.create_task(
        _dashboard(
            orchestrator,
            options,
            runner,
            stop,
            lambda url: _print(f"pycm demo: dashboard {url}"),
            dashboard_launcher,
        ),
        name="demo dashboard",
    )
    try:
        verdict = await runner
    finally:
        stop.set()
        await asyncio.gather(dashboard, return_exceptions=True)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    if verdict.ok:
        _print(f"pycm demo: ok: leader(s) elected: {', '.join(verdict.leaders)}")
        return 0
    for problem in verdict.problems:
        sys.stderr.write(f"pycm demo: failed: {problem}\n")
    return 1


async def _run_interactive(
    options: DemoOptions, launcher: TuiLauncher, dashboard_launcher: DashboardLauncher | None
) -> int:
    """The demo behind ``pycm top``: the TUI owns the terminal, the chaos keys act on the demo;
    quitting the TUI stops the demo, and a demo that fails closes the TUI."""
    stop = asyncio.Event()
    lines: deque[str] = deque(maxlen=400)
    orchestrator = Orchestrator(options, lines.append)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner = asyncio.create_task(orchestrator.run(stop), name="demo")
    chaos = Chaos(orchestrator)
    urls: list[str] = []
    announced = asyncio.Event()

    def announce(url: str) -> None:
        urls.append(f"pycm demo: dashboard {url}")
        announced.set()

    dashboard = asyncio.create_task(
        _dashboard(orchestrator, options, runner, stop, announce, dashboard_launcher),
        name="demo dashboard",
    )
    try:
        if await _replicas_ready(orchestrator, options, runner):
            if dashboard_launcher is not None:
                # Printed before the TUI takes the screen (and again when it leaves).
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(announced.wait(), DASHBOARD_WAIT)
                for line in urls:
                    _print(line)
            await _top_until_done(orchestrator, options, launcher, chaos, runner, stop)
        stop.set()
        verdict = await runner
    finally:
        stop.set()
        await asyncio.gather(dashboard, return_exceptions=True)
        await chaos.aclose()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    for line in [*list(lines)[-5:], *urls]:
        _print(line)
    if verdict.ok:
        _print(f"pycm demo: ok: leader(s) elected: {', '.join(verdict.leaders)}")
        return 0
    for problem in verdict.problems:
        sys.stderr.write(f"pycm demo: failed: {problem}\n")
    return 1


async def _top_until_done(
    orchestrator: Orchestrator,
    options: DemoOptions,
    launcher: TuiLauncher,
    chaos: Chaos,
    runner: asyncio.Task[Any],
    stop: asyncio.Event,
) -> None:
    token = (await load_config(str(orchestrator.workdir / "kubeconfig"))).token or ""
    replicas = [(r.identity, r.url, str(r.cert_file)) for r in orchestrator.replicas]

    async def top_app() -> int:
        return await launcher(replicas, token, chaos.controls(), stop)

    top = asyncio.create_task(top_app(), name="pycm top")
    await asyncio.wait({top, runner}, return_when=asyncio.FIRST_COMPLETED)
    stop.set()
    await asyncio.gather(top, return_exceptions=True)
