"""The emulator's options: what ``pycm sim`` flags set and ``run_emulator(**options)`` takes.

The defaults behave like a real cluster, for ``pycm sim`` and in-process alike: HTTPS with a
throwaway CA (client-go, so kubectl, sends a kubeconfig's token only over TLS) and a kubelet
that binds pods and makes them Ready. Tests and benchmarks state what they rely on (``tls=False``
for plain HTTP, ``kubelet=False`` to see pods exactly as written) instead of taking defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from starlette.middleware import Middleware

from pycm.sim.history import DEFAULT_HISTORY_BYTES
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.serving_limits import ServingLimits

__all__ = ["SIM_SERVING_LIMITS", "EmulatorOptions"]

# The emulator's connection limits (pycm.util.serving_limits): the manager's, but an idle
# keep-alive connection stays 120 s — kube-apiserver leaves idle connections to the client, and
# client-go (like pycm.kube) drops its own after 90 s; closing first would make a request sent on
# one as it closes fail with a reset (seen as httpx.ReadError on a PUT under load).
SIM_SERVING_LIMITS = ServingLimits(idle_timeout=120.0)


@dataclass(frozen=True)
class EmulatorOptions:
    host: str = "127.0.0.1"
    port: int = 0  # 0: any free port
    tls: bool = True  # serve HTTPS with a fresh self-signed CA (its data in the kubeconfig)
    nodes: int = 1  # Ready nodes sim-node-0.. in the fresh cluster
    # The simulated kubelet (pycm.sim.kubelet): it binds pods, makes them Ready and confirms
    # deletions, as a cluster's nodes do. Off, pods stay Pending exactly as they were written.
    kubelet: bool = True
    # How long a scheduled pod takes to become Ready (0: at once, "instant" mode).
    pod_ready_delay: float = 1.0
    unready_fraction: float = 0.0  # pods that never become Ready
    crashloop_fraction: float = 0.0  # pods whose container keeps restarting
    pod_terminate_delay: float = 1.0  # a deleted pod terminates in min(grace, this) seconds
    kubelet_seed: int = 0  # the seed of the per-pod jitter and fates
    # Watch history events retained; a watch from an older resourceVersion gets 410 Expired.
    watch_window: int = 10_000
    # Bytes of encoded objects the watch history may hold (the second bound beside the window).
    watch_history_bytes: int = DEFAULT_HISTORY_BYTES
    # Live events one watcher may fall behind by before its watch is ended.
    watch_queue_size: int = 1_000
    # Seconds between BOOKMARK events on watches that allow them (kube: about a minute).
    bookmark_interval: float = 10.0
    # kube's WatchList gate (on since 1.34): watches may stream their initial events
    # (sendInitialEvents, pycm.sim.watchlist); off, such a watch is refused (422).
    watch_list: bool = True
    # kube's CoordinatedLeaderElection gate (beta, off by default since 1.33): the coordinator
    # (pycm.sim.leader_coordinator) elects leaders among LeaseCandidates. The kind is served
    # either way; off, nothing acts on it.
    coordinated_leader_election: bool = False
    # kube's ShardedListAndWatch gate (KEP-5866, alpha in 1.36, off by default as there): lists
    # and watches honour shardSelector (pycm.sim.shardselector); off, the parameter is ignored.
    sharded_list_and_watch: bool = False
    # kube's DeploymentPodReplacementPolicy gate (KEP-5882, alpha in 1.36, off by default as
    # there): a Deployment keeps and validates spec.podReplacementPolicy; off, a write drops it
    # unless the stored Deployment has it (pycm.sim.registry.workloads).
    deployment_pod_replacement_policy: bool = False
    token_auth_file: str | None = None
    authz_policy_file: str | None = None
    # Where the kubeconfig is written; None: a file in the emulator's temporary directory.
    kubeconfig_out: str | None = None
    # Pods with a grace period keep a deletionTimestamp until Store.finalize_pod_deletion()
    # (the kubelet's confirmation). Off until the simulated kubelet exists: deletes are at once.
    graceful_pod_deletion: bool = False
    admin_token: str | None = None  # None: a random one
    clock: Clock = REAL_CLOCK
    # Connection cap, TLS-handshake / request-head / idle timeouts, head size (--max-connections…).
    limits: ServingLimits = SIM_SERVING_LIMITS
    # Extra pure-ASGI middleware, outermost first (the fault engineer's slot).
    middleware: Sequence[Middleware] = field(default_factory=tuple)

    def validate(self) -> list[str]:
        """Every problem with these options (empty when they are usable)."""
        problems = []
        if not 0 <= self.port <= 65535:
            problems.append(f"--port must be between 0 and 65535, got {self.port}")
        if self.nodes < 0:
            problems.append(f"--nodes must not be negative, got {self.nodes}")
        if self.pod_ready_delay < 0:
            problems.append("--pod-ready-delay must not be negative")
        for flag, value in (
            ("--unready-fraction", self.unready_fraction),
            ("--crashloop-fraction", self.crashloop_fraction),
        ):
            if not 0 <= value <= 1:
                problems.append(f"{flag} must be between 0 and 1, got {value}")
        if self.unready_fraction + self.crashloop_fraction > 1:
            problems.append("--unready-fraction plus --crashloop-fraction must not exceed 1")
        if self.pod_terminate_delay < 0:
            problems.append("pod_terminate_delay must not be negative")
        if self.watch_window < 1:
            problems.append(f"--watch-window must be at least 1, got {self.watch_window}")
        if self.watch_history_bytes < 1:
            problems.append("--watch-history-mib must be positive")
        if self.watch_queue_size < 1:
            problems.append("watch_queue_size must be at least 1")
        problems += [f"serving limits: {p}" for p in self.limits.validate()]
        if self.bookmark_interval <= 0:
            problems.append("bookmark_interval must be positive")
        return problems
