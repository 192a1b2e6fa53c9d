"""``pycm lease watch NAMESPACE/NAME``: observe any Lease, one line per change, flaps flagged.

Observe-only: it needs ``get``/``list``/``watch`` on leases and writes nothing, so it works
against any cluster (KCM's ``kube-system/kube-controller-manager``, the scheduler's, pycm's).

For each change of the Lease it prints the local time, the holder, ``leaseTransitions``, the
lease duration, the renew interval seen (between the renewTime values of two consecutive
changes) and the skew (renewTime minus the local wall clock when the change arrived: a large
value is a slow watch or a skewed clock). When more than ``--flap-threshold`` transitions
happen within ``--flap-window`` it prints ``WARNING flap: N transitions in <window>``.

The loop: list the one Lease (field selector ``metadata.name``) → print its state (or wait for
it to be created) → watch from the list's resourceVersion → on a normal end, re-watch from the
last version seen; on 410 Expired, re-list; on API or transport errors, back off and re-list.
Each holder change is also a :class:`~pycm.trace.kinds.LeaderObserved` event on the default bus.

Coordinated leader election (KEP-4355): a line also shows the coordinator's ``strategy`` and
``preferred=`` holder when the Lease has them (a change of either is a line and a
:class:`~pycm.trace.kinds.LeaseCoordinationObserved` event), and the Lease's LeaseCandidates
(``coordination.k8s.io/v1beta1``, those whose ``spec.leaseName`` is the Lease) are listed, oldest
emulation version first, after the first state and after each change of the preferred holder —
one line each. A cluster that does not serve them (404) shows none; another error reading them
is one line, never fatal (``list`` on leasecandidates is optional).
``--once`` prints the current state and exits: 0 when the Lease exists, 1 when it does not or
the API fails (one line saying which, no retry: a one-shot check must not hang).
Exit statuses: 0 on Ctrl-C, SIGTERM or after ``--once``'s state; 1 as above; 2 for bad input (one
error line, no traceback).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import signal
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pycm.kube import LEASES, Client, ConfigError, Expired, KubeError, load_config
from pycm.kube.errors import NotFound
from pycm.leaderelection.candidate import LEASE_CANDIDATES
from pycm.leaderelection.record import LeaderElectionRecord, parse_micro_time
from pycm.trace.bus import Bus, default_bus
from pycm.trace.kinds import LeaderObserved, LeaseCoordinationObserved
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.durations import duration_arg, format_duration

__all__ = [
    "FlapDetector",
    "LeaseChange",
    "LeaseTracker",
    "add_subcommand",
    "candidate_lines",
    "format_change",
    "parse_lease_ref",
    "watch_lease",
]

# API errors back off from 0.5 s, doubling, up to 10 s: an observer must not hammer a
# struggling API server (the reflector's 800 ms → 30 s is for a whole informer; one object is
# cheaper, and the operator watching wants to see recovery sooner).
_ERROR_BACKOFF_INITIAL_S = 0.5
_ERROR_BACKOFF_CAP_S = 10.0
_WATCH_TIMEOUT_S = 300  # the server ends each watch by then; we re-watch from the last version


@dataclass(frozen=True, slots=True)
class LeaseChange:
    """One observed version of the Lease."""

    local_ns: int  # local wall clock when the change was seen
    holder: str
    previous_holder: str | None  # None for the first observation
    transitions: int
    lease_duration_s: int
    renew_time_ns: int
    renew_interval_s: float | None  # None for the first observation or a missing renewTime
    skew_ms: float | None  # renewTime − local clock; None without a renewTime
    strategy: str = ""  # the coordinator's, with coordinated leader election
    preferred_holder: str = ""  # the candidate the coordinator asks the holder to hand over to
    coordination_changed: bool = False  # strategy or preferred holder differ from the last

    @property
    def holder_changed(self) -> bool:
        return self.previous_holder is not None and self.previous_holder != self.holder


class FlapDetector:
    """Counts transitions in a sliding window. Invariant: ``_times`` holds the monotonic times
    of the transitions seen within the last ``window`` seconds, oldest first."""

    def __init__(self, threshold: int, window: float) -> None:
        if threshold < 0 or window <= 0:
            raise ValueError("the flap threshold is >= 0 and the window > 0")
        self.threshold = threshold
        self.window = window
        self._times: deque[float] = deque()

    def add(self, now: float, count: int = 1) -> int | None:
        """Record ``count`` transitions at ``now``; the number in the window when it exceeds
        the threshold (a flap), else None."""
        self._times.extend([now] * max(0, count))
        while self._times and self._times[0] <= now - self.window:
            self._times.popleft()
        if count > 0 and len(self._times) > self.threshold:
            return len(self._times)
        return None


class LeaseTracker:
    """Turns successive Lease objects into :class:`LeaseChange` values (pure: times are given).

    Invariant: ``_last`` is the record of the last change returned (None before the first)."""

    def __init__(self, lease: str, flaps: FlapDetector | None = None, bus: Bus | None = None):
        self.lease = lease
        self.flaps = flaps
        self._bus = bus
        self._last: LeaderElectionRecord | None = None

    def forget(self) -> None:
        """The Lease was deleted: the next one is a first observation again."""
        self._last = None

    def observe(
        self, obj: dict[str, Any], local_ns: int, now: float
    ) -> tuple[LeaseChange | None, int | None]:
        """The change this object is (None when the record did not change), and the flap
        count when this change made the window exceed the threshold."""
        record = LeaderElectionRecord.from_lease_spec(obj.get("spec"))
        last = self._last
        if last is not None and record.raw() == last.raw():
            return None, None
        self._last = record
        interval = None
        if last is not None and last.renew_time_ns and record.renew_time_ns:
            interval = (record.renew_time_ns - last.renew_time_ns) / 1e9
        skew = (record.renew_time_ns - local_ns) / 1e6 if record.renew_time_ns else None
        change = LeaseChange(
            local_ns=local_ns,
            holder=record.holder_identity,
            previous_holder=None if last is None else last.holder_identity,
            transitions=record.leader_transitions,
            lease_duration_s=record.lease_duration_seconds,
            renew_time_ns=record.renew_time_ns,
            renew_interval_s=interval,
            skew_ms=skew,
            strategy=record.strategy,
            preferred_holder=record.preferred_holder,
            coordination_changed=(record.strategy, record.preferred_holder)
            != ((last.strategy, last.preferred_holder) if last is not None else ("", "")),
        )
        flap = None
        if last is not None and self.flaps is not None:
            count = record.leader_transitions - last.leader_transitions
            if count <= 0 and change.holder_changed and record.holder_identity:
                count = 1  # transitions reset or not kept: a new holder is still a transition
            flap = self.flaps.add(now, count)
        if last is None or change.holder_changed:
            self._emit(change)
        if change.coordination_changed:
            (self._bus or default_bus()).point(
                LeaseCoordinationObserved(
                    lease=self.lease,
                    holder=change.holder,
                    preferred_holder=change.preferred_holder,
                    strategy=change.strategy,
                )
            )
        return change, flap

    def _emit(self, change: LeaseChange) -> None:
        bus = self._bus or default_bus()
        bus.point(
            LeaderObserved(
                lease=self.lease,
                old_holder=change.previous_holder or "",
                new_holder=change.holder,
                transitions=change.transitions,
                lease_duration_s=float(change.lease_duration_s),
                skew_ms=change.skew_ms or 0.0,
            )
        )


def _local_time(wall_ns: int) -> str:
    return dt.datetime.fromtimestamp(wall_ns / 1e9).strftime("%H:%M:%S.%f")[:-3]


def format_change(change: LeaseChange) -> str:
    """``12:00:01.250 holder=a transitions=3 duration=15s renew-interval=2.00s skew=+4ms``."""
    interval = "-" if change.renew_interval_s is None else f"{change.renew_interval_s:.2f}s"
    skew = "-" if change.skew_ms is None else f"{change.skew_ms:+.0f}ms"
    parts = [
        _local_time(change.local_ns),
        f"holder={change.holder or '<none>'}",
        f"transitions={change.transitions}",
        f"duration={change.lease_duration_s}s",
        f"renew-interval={interval}",
        f"skew={skew}",
    ]
    if change.strategy:
        parts.append(f"strategy={change.strategy}")
    if change.preferred_holder:
        parts.append(f"preferred={change.preferred_holder}")
    if change.holder_changed:
        parts.append(f"(leader changed from {change.previous_holder or '<none>'})")
    return " ".join(parts)


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in text.split("-")[0].split("."))


async def candidate_lines(client: Client, namespace: str, name: str) -> list[str]:
    """One line per LeaseCandidate of the Lease, oldest emulation version first (the
    OldestEmulationVersion pick); none when the cluster does not serve LeaseCandidates."""
    try:
        listed = await client.list(LEASE_CANDIDATES, namespace=namespace)
    except NotFound:
        return []
    except KubeError as err:
        return [f"candidates of {namespace}/{name}: {err}"]
    mine = [
        item
        for item in listed.get("items") or []
        if isinstance(item, dict) and (item.get("spec") or {}).get("leaseName") == name
    ]

    def order(item: dict[str, Any]) -> tuple[tuple[int, ...], str]:
        spec = item.get("spec") or {}
        return _version_key(str(spec.get("emulationVersion") or "")), item["metadata"]["name"]

    lines = []
    for item in sorted(mine, key=order):
        spec = item.get("spec") or {}
        renewed = parse_micro_time(spec.get("renewTime"))
        lines.append(
            f"  candidate {item['metadata']['name']} "
            f"emulation={spec.get('emulationVersion') or '-'} "
            f"binary={spec.get('binaryVersion') or '-'} "
            f"strategy={spec.get('strategy') or '-'} "
            f"renewed={_local_time(renewed) if renewed else '-'}"
            + (" (pinged)" if spec.get("pingTime") else "")
        )
    return lines


def parse_lease_ref(text: str) -> tuple[str, str]:
    """``namespace/name`` → (namespace, name); ValueError with the reason otherwise."""
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ValueError(f"want NAMESPACE/NAME, got {text!r}")
    return namespace, name


async def watch_lease(
    client: Client,
    namespace: str,
    name: str,
    out: Callable[[str], None],
    *,
    flaps: FlapDetector | None = None,
    once: bool = False,
    clock: Clock = REAL_CLOCK,
    bus: Bus | None = None,
) -> int:
    """Print the Lease's changes until cancelled (or, with ``once``, its current state: 0 if
    it exists, else 1 as for an API error)."""
    lease = f"{namespace}/{name}"
    tracker = LeaseTracker(lease, flaps, bus)
    selector = f"metadata.name={name}"
    failures = 0
    waiting_said = False

    candidates_shown = False

    async def show(obj: dict[str, Any]) -> bool:
        nonlocal candidates_shown
        change, flap = tracker.observe(obj, clock.wall_ns(), clock.monotonic())
        if change is not None:
            out(format_change(change))
            if not candidates_shown or change.coordination_changed:
                candidates_shown = True
                for line in await candidate_lines(client, namespace, name):
                    out(line)
        if flap is not None and flaps is not None:
            out(f"WARNING flap: {flap} transitions in {format_duration(flaps.window)}")
        return change is not None

    while True:
        try:
            listed = await client.list(LEASES, namespace=namespace, field_selector=selector)
            rv = str((listed.get("metadata") or {}).get("resourceVersion") or "")
            items = [i for i in listed.get("items") or [] if isinstance(i, dict)]
            if items:
                await show(items[0])
                if once:
                    return 0
            elif once:
                out(f"lease {lease} does not exist")
                return 1
            elif not waiting_said:
                out(f"lease {lease} does not exist yet; waiting for it")
                waiting_said = True
            failures = 0
            while True:  # re-watch from the last version after each normal end
                async with client.watch(
                    LEASES,
                    namespace=namespace,
                    field_selector=selector,
                    resource_version=rv or None,
                    timeout_seconds=_WATCH_TIMEOUT_S,
                ) as stream:
                    async for event in stream:
                        meta = event.object.get("metadata") or {}
                        rv = str(meta.get("resourceVersion") or rv)
                        if event.type in ("ADDED", "MODIFIED"):
                            await show(event.object)
                        elif event.type == "DELETED":
                            out(f"{_local_time(clock.wall_ns())} lease {lease} deleted; waiting")
                            tracker.forget()
        except Expired:
            continue  # the version left the server's window: list again
        except KubeError as err:
            # A cancellation that arrived while a request or a stream was being closed can
            # surface as the client's error (closing raised instead): it is still a cancellation
            # — retrying here would swallow it and Ctrl-C would never end the watch.
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise asyncio.CancelledError from err
            if once:
                out(f"{_local_time(clock.wall_ns())} error reading {lease}: {err}")
                return 1
            delay = min(_ERROR_BACKOFF_CAP_S, _ERROR_BACKOFF_INITIAL_S * 2 ** min(failures, 10))
            failures += 1
            out(
                f"{_local_time(clock.wall_ns())} error watching {lease}: {err}; "
                f"retrying in {delay:.1f}s"
            )
            await clock.sleep(delay)


# --- the command -------------------------------------------------------------------------------


def add_subcommand(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lease",
        help="observe leader-election Leases",
        description="Observe leader-election Leases in any cluster (read-only).",
    )
    verbs = parser.add_subparsers(title="commands", metavar="COMMAND", dest="lease_command")
    watch = verbs.add_parser(
        "watch",
        help="print each change of a Lease and warn on flaps",
        description="Print one line per change of the Lease NAMESPACE/NAME: local time, "
        "holder, transitions, lease duration, the renew interval seen and the skew of "
        "renewTime against the local clock. Needs only get/list/watch on leases.",
    )
    watch.add_argument("lease", metavar="NAMESPACE/NAME", help="the Lease to watch")
    watch.add_argument("--kubeconfig", default=None, help="the kubeconfig (else KUBECONFIG)")
    watch.add_argument("--context", default=None, help="the kubeconfig context to use")
    watch.add_argument(
        "--flap-threshold",
        type=int,
        default=3,
        metavar="N",
        help="warn when more than N transitions happen within --flap-window (default 3)",
    )
    watch.add_argument(
        "--flap-window",
        type=duration_arg,
        default=3600.0,
        metavar="DURATION",
        help="the sliding window of the flap warning (default 1h)",
    )
    watch.add_argument(
        "--once",
        action="store_true",
        help="print the current state and exit (1 when the Lease does not exist)",
    )
    watch.set_defaults(func=run_watch)
    parser.set_defaults(func=lambda _: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _print(line: str) -> None:
    print(line, flush=True)


def run_watch(args: argparse.Namespace) -> int:
    def fail(message: str) -> int:
        sys.stderr.write(f"pycm lease watch: error: {message}\n")
        return 2

    try:
        namespace, name = parse_lease_ref(args.lease)
    except ValueError as err:
        return fail(str(err))
    if args.flap_threshold < 0:
        return fail(f"--flap-threshold must not be negative, got {args.flap_threshold}")
    if args.flap_window <= 0:
        return fail("--flap-window must be positive")
    flaps = FlapDetector(args.flap_threshold, args.flap_window)
    try:
        return asyncio.run(_main(args, namespace, name, flaps))
    except KeyboardInterrupt:
        return 0
    except _BadInput as err:
        return fail(str(err))


class _BadInput(Exception):
    pass


async def _main(args: argparse.Namespace, namespace: str, name: str, flaps: FlapDetector) -> int:
    try:
        config = await load_config(args.kubeconfig, context=args.context, user_agent="pycm-lease")
        client = await Client.connect(config)
    except (ConfigError, OSError, ValueError) as err:
        raise _BadInput(str(err)) from None
    async with client:
        watching = asyncio.create_task(
            watch_lease(client, namespace, name, _print, flaps=flaps, once=args.once),
            name="lease-watch",
        )
        loop = asyncio.get_running_loop()
        # SIGTERM and Ctrl-C cancel the watch itself (a clean exit 0), not the task awaiting
        # it: asyncio.run's own SIGINT handler cancels the main task once and only once.
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, watching.cancel)
        try:
            return await watching
        except asyncio.CancelledError:
            if not watching.cancelled():
                raise  # we were cancelled, not the watch
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
    return 0
