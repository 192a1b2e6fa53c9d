"""``pycm sim``: serve the emulator until SIGINT or SIGTERM.

It prints exactly one line, ``pycm sim: serving <url> (kubeconfig: <path>)``, once the server
accepts connections and the kubeconfig is written. Exit statuses: 0 after a signal (it stops
serving, ends every open watch and exits), 2 for a bad flag (argparse and option validation), 1
when it cannot start (port in use, unreadable token or policy file, unwritable kubeconfig) —
always one error line, never a traceback.

The defaults behave like a real cluster, so a first ``pycm sim`` then ``kubectl --kubeconfig
<path> create deployment web --image=nginx`` works: HTTPS with a throwaway CA written into the
kubeconfig (kubectl, like all of client-go, sends a kubeconfig's bearer token only over TLS),
and the simulated kubelet, which makes pods Ready. ``--tls=false`` (or ``--insecure-http``)
serves plain HTTP; ``--kubelet off`` leaves pods Pending. The defaults are
:class:`~pycm.sim.options.EmulatorOptions`'.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

from pycm.sim.history import DEFAULT_HISTORY_BYTES
from pycm.util.durations import duration_arg

MIB = 1024 * 1024

if TYPE_CHECKING:
    from pycm.sim.options import EmulatorOptions

__all__ = ["add_subcommand", "run"]


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: want 0-65535") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: want 0-65535")
    return value


def _count(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {minimum}")
        return value

    return parse


def _on_off(text: str) -> bool:
    if text.lower() in ("on", "true", "1"):
        return True
    if text.lower() in ("off", "false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"invalid value {text!r}: want on or off")


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid fraction {text!r}: want 0-1") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"invalid fraction {text!r}: want 0-1")
    return value


SIM_FEATURE_GATES = {
    "WatchList": True,
    "CoordinatedLeaderElection": False,
    "ShardedListAndWatch": False,
    "DeploymentPodReplacementPolicy": False,
}
"""The kube-apiserver feature gates ``pycm sim --feature-gates`` takes, with their defaults."""


def _feature_gates(text: str) -> dict[str, bool]:
    """kube's ``--feature-gates`` value: ``Gate=true,Other=false``; a gate the emulator does not
    have is refused with kube's words."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, eq, value = item.partition("=")
        if not eq:
            raise argparse.ArgumentTypeError(f"missing bool value for {name}")
        if name not in SIM_FEATURE_GATES:
            known = ", ".join(sorted(SIM_FEATURE_GATES))
            raise argparse.ArgumentTypeError(
                f"unrecognized feature gate: {name} (the emulator has {known})"
            )
        if value.lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"invalid value of {name}={value}, err: want a bool")
        gates[name] = value.lower() == "true"
    return gates


def add_subcommand(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sim",
        help="serve the embedded Kubernetes API emulator",
        description="Serve an in-memory Kubernetes API (namespaces, nodes, pods, events, "
        "configmaps, deployments, replicasets, leases, token and access reviews) on 127.0.0.1, "
        "and write a kubeconfig for it.",
    )
    serving = parser.add_argument_group("serving")
    serving.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default %(default)s)"
    )
    serving.add_argument("--port", type=_port, default=0, help="port (0: any free port)")
    serving.add_argument(
        "--tls",
        type=_on_off,
        nargs="?",
        const=True,
        default=None,  # EmulatorOptions' (not imported here: starlette costs every command)
        metavar="true|false",
        help="serve HTTPS with a throwaway CA, written into the kubeconfig (default true: "
        "kubectl, like all of client-go, sends the kubeconfig's token only over TLS)",
    )
    serving.add_argument(
        "--insecure-http",
        dest="tls",
        action="store_false",
        help="serve plain HTTP, the same as --tls=false (the kubernetes Python client sends "
        "tokens over it; kubectl does not)",
    )
    serving.add_argument("--kubeconfig-out", metavar="PATH", help="write the kubeconfig here")
    # Connection limits (pycm.util.serving_limits); None keeps EmulatorOptions' default.
    serving.add_argument(
        "--max-connections",
        type=_count(0),
        default=None,
        metavar="N",
        help="connections held open at most; more are closed as they arrive (0: no cap; "
        "default 4096, lowered to fit the open-files limit)",
    )
    serving.add_argument(
        "--tls-handshake-timeout",
        type=duration_arg,
        default=None,
        metavar="DURATION",
        help="how long a client may take to complete the TLS handshake (default 10s)",
    )
    serving.add_argument(
        "--request-head-timeout",
        type=duration_arg,
        default=None,
        metavar="DURATION",
        help="how long a client may take to send a request's line and headers, from the "
        "connection being ready or the request's first byte; then it is closed (default 32s)",
    )
    serving.add_argument(
        "--idle-connection-timeout",
        type=duration_arg,
        default=None,
        metavar="DURATION",
        help="how long an idle keep-alive connection stays open (default 2m, longer than "
        "client-go's 90s, so clients close first)",
    )
    cluster = parser.add_argument_group("cluster")
    cluster.add_argument("--nodes", type=_count(0), default=1, help="Ready nodes (default 1)")
    cluster.add_argument(
        "--pod-ready-delay",
        type=duration_arg,
        default=1.0,
        metavar="DURATION",
        help="how long the simulated kubelet takes to make a pod Ready (default 1s)",
    )
    cluster.add_argument(
        "--kubelet",
        type=_on_off,
        nargs="?",
        const=True,
        default=None,  # EmulatorOptions'
        metavar="on|off",
        help="run the simulated kubelet: bind pods, make them Ready, confirm deletions "
        "(default on; off leaves pods Pending as they were written)",
    )
    cluster.add_argument(
        "--unready-fraction",
        type=_fraction,
        default=0.0,
        metavar="F",
        help="fraction of pods the kubelet never makes Ready (default 0)",
    )
    cluster.add_argument(
        "--crashloop-fraction",
        type=_fraction,
        default=0.0,
        metavar="F",
        help="fraction of pods whose container crash-loops (default 0)",
    )
    cluster.add_argument(
        "--pod-terminate-delay",
        type=duration_arg,
        default=1.0,
        metavar="DURATION",
        help="a deleted pod terminates in min(its grace period, this) (default 1s)",
    )
    cluster.add_argument(
        "--watch-window",
        type=_count(1),
        default=10_000,
        metavar="N",
        help="watch events retained; older resourceVersions get 410 Expired (default 10000)",
    )
    cluster.add_argument(
        "--watch-history-mib",
        type=_count(1),
        default=DEFAULT_HISTORY_BYTES // MIB,
        metavar="MIB",
        help="encoded objects the watch history holds at most, whatever the window "
        f"(default {DEFAULT_HISTORY_BYTES // MIB})",
    )
    cluster.add_argument(
        "--feature-gates",
        type=_feature_gates,
        default={},
        metavar="GATE=BOOL,...",
        help="kube-apiserver feature gates: WatchList (default true: watches may stream their "
        "initial events, sendInitialEvents; false refuses them as an older apiserver does), "
        "CoordinatedLeaderElection (default false, as kube's beta: true runs the coordinator "
        "that elects leaders among LeaseCandidates), "
        "ShardedListAndWatch (default false, alpha as in kube 1.36: true filters lists and "
        "watches by shardSelector), "
        "DeploymentPodReplacementPolicy (default false, alpha as in kube 1.36: true keeps and "
        "validates a Deployment's spec.podReplacementPolicy; false drops it from writes)",
    )
    security = parser.add_argument_group("security")
    security.add_argument(
        "--token-auth-file", metavar="FILE", help='static tokens: token,user,uid,"g1,g2"'
    )
    security.add_argument(
        "--authz-policy-file", metavar="FILE", help="YAML/JSON authorization rules"
    )
    parser.set_defaults(func=run)


def options_from_args(args: argparse.Namespace) -> EmulatorOptions:
    from dataclasses import replace

    from pycm.sim.options import SIM_SERVING_LIMITS, EmulatorOptions

    # A flag left out keeps EmulatorOptions' default (one place says what the defaults are).
    stated = {
        name: value
        for name, value in (("tls", args.tls), ("kubelet", args.kubelet))
        if value is not None
    }
    limits = replace(
        SIM_SERVING_LIMITS,
        **{
            field: value
            for field, value in (
                ("max_connections", args.max_connections),
                ("tls_handshake_timeout", args.tls_handshake_timeout),
                ("read_header_timeout", args.request_head_timeout),
                ("idle_timeout", args.idle_connection_timeout),
            )
            if value is not None
        },
    )
    return EmulatorOptions(
        limits=limits,
        host=args.host,
        port=args.port,
        nodes=args.nodes,
        pod_ready_delay=args.pod_ready_delay,
        unready_fraction=args.unready_fraction,
        crashloop_fraction=args.crashloop_fraction,
        pod_terminate_delay=args.pod_terminate_delay,
        watch_window=args.watch_window,
        watch_history_bytes=args.watch_history_mib * MIB,
        token_auth_file=args.token_auth_file,
        authz_policy_file=args.authz_policy_file,
        kubeconfig_out=args.kubeconfig_out,
        watch_list=args.feature_gates.get("WatchList", SIM_FEATURE_GATES["WatchList"]),
        coordinated_leader_election=args.feature_gates.get(
            "CoordinatedLeaderElection", SIM_FEATURE_GATES["CoordinatedLeaderElection"]
        ),
        sharded_list_and_watch=args.feature_gates.get(
            "ShardedListAndWatch", SIM_FEATURE_GATES["ShardedListAndWatch"]
        ),
        deployment_pod_replacement_policy=args.feature_gates.get(
            "DeploymentPodReplacementPolicy", SIM_FEATURE_GATES["DeploymentPodReplacementPolicy"]
        ),
        **stated,
    )


def run(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    problems = options.validate()
    if problems:
        for problem in problems:
            sys.stderr.write(f"pycm sim: error: {problem}\n")
        return 2
    return asyncio.run(_serve(options))


async def _serve(options: EmulatorOptions) -> int:
    from pycm.sim.heap import freeze_after_full_collections
    from pycm.sim.server import EmulatorError, run_emulator

    # This process is the emulator's own: its store and history are the heap (pycm.sim.heap).
    unfreeze = freeze_after_full_collections()
    # Faults and notable emulator actions (pycm.sim, INFO) are one line each on stderr.
    sim_log = logging.getLogger("pycm.sim")
    if not sim_log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        sim_log.addHandler(handler)
        sim_log.setLevel(logging.INFO)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with run_emulator(options) as emulator:
            print(
                f"pycm sim: serving {emulator.url} (kubeconfig: {emulator.kubeconfig_path})",
                flush=True,
            )
            await stop.wait()
    except EmulatorError as err:
        sys.stderr.write(f"pycm sim: error: {err}\n")
        return 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        unfreeze()
    return 0
