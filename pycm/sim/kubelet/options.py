"""The simulated kubelet's options (``pycm sim`` flags), its name as a writer, and the seeded
draws the options drive: each pod's fate and its jittered ready delay, stable for a given seed,
namespace and name."""

from __future__ import annotations

import random
from dataclasses import dataclass

from pycm.sim.options import EmulatorOptions

__all__ = [
    "CRASHLOOP",
    "MANAGER",
    "NORMAL",
    "UNREADY",
    "KubeletOptions",
    "draw_fate",
    "draw_ready_delay",
    "kubelet_options",
]

# The field manager a cluster's managedFields name for the kubelet's writes (its User-Agent's
# product): node and pod status through the status subresource, its node Lease directly.
MANAGER = "kubelet"

NORMAL = "normal"
UNREADY = "unready"
CRASHLOOP = "crashloop"


@dataclass(frozen=True)
class KubeletOptions:
    pod_ready_delay: float = 1.0  # seconds from binding to Ready; 0: instant mode
    jitter: float = 0.2  # each pod's delay is scaled by a factor in [1 - jitter, 1 + jitter]
    unready_fraction: float = 0.0  # pods that run but never become Ready
    crashloop_fraction: float = 0.0  # pods whose container keeps restarting
    terminate_delay: float = 1.0  # a terminating pod takes min(grace, this) seconds
    restart_interval: float = 2.0  # seconds between a crash-looping container's restarts
    # kube's node status update frequency is 10s, its lease renew interval 10s as well.
    node_heartbeat_interval: float = 10.0
    seed: int = 0

    def validate(self) -> list[str]:
        problems = []
        if self.pod_ready_delay < 0:
            problems.append("--pod-ready-delay must not be negative")
        if not 0 <= self.jitter < 1:
            problems.append("kubelet jitter must be in [0, 1)")
        for name, value in (
            ("--unready-fraction", self.unready_fraction),
            ("--crashloop-fraction", self.crashloop_fraction),
        ):
            if not 0 <= value <= 1:
                problems.append(f"{name} must be between 0 and 1, got {value}")
        if self.unready_fraction + self.crashloop_fraction > 1:
            problems.append("--unready-fraction plus --crashloop-fraction must not exceed 1")
        if self.terminate_delay < 0:
            problems.append("the pod terminate delay must not be negative")
        if self.restart_interval <= 0 or self.node_heartbeat_interval <= 0:
            problems.append("kubelet intervals must be positive")
        return problems


def kubelet_options(options: EmulatorOptions) -> KubeletOptions:
    """The kubelet's options from the emulator's (``pycm sim`` flags)."""
    return KubeletOptions(
        pod_ready_delay=options.pod_ready_delay,
        unready_fraction=options.unready_fraction,
        crashloop_fraction=options.crashloop_fraction,
        terminate_delay=options.pod_terminate_delay,
        seed=options.kubelet_seed,
    )


def draw_fate(options: KubeletOptions, namespace: str, name: str) -> str:
    """The seeded fate of the pod ``namespace/name``: NORMAL, UNREADY or CRASHLOOP."""
    draw = random.Random(f"{options.seed}/{namespace}/{name}").random()
    if draw < options.unready_fraction:
        return UNREADY
    if draw < options.unready_fraction + options.crashloop_fraction:
        return CRASHLOOP
    return NORMAL


def draw_ready_delay(options: KubeletOptions, namespace: str, name: str) -> float:
    """The pod's ready delay: ``pod_ready_delay`` times a seeded factor in [1 - jitter,
    1 + jitter]."""
    rng = random.Random(f"{options.seed}/{namespace}/{name}/delay")
    jitter = options.jitter
    factor = 1.0 + rng.uniform(-jitter, jitter) if jitter else 1.0
    return options.pod_ready_delay * factor
