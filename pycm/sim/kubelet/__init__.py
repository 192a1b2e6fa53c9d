"""The simulated kubelet (and the scheduler's one job): it makes pods look like they run.

It runs inside the emulator process and works on the :class:`~pycm.sim.store.Store` directly,
on an injected :class:`~pycm.util.clock.Clock` (tests advance a FakeClock). What it does:

- **Nodes**: every ``node_heartbeat_interval`` it refreshes each node's conditions
  (``lastHeartbeatTime``; Ready True) and renews the node's Lease in ``kube-node-lease``.
- **Scheduling**: a pod without ``spec.nodeName`` is bound round-robin over the nodes
  (``PodScheduled`` True); with no node, ``PodScheduled`` False / Unschedulable.
- **Start-up**: a bound pod turns Running (containers started, not ready) after half its delay,
  then Ready after its delay: ``pod_ready_delay`` times a per-pod jitter factor in
  ``[1 - jitter, 1 + jitter]``. ``pod_ready_delay == 0`` is *instant* mode: bound, Running and
  Ready in one write as soon as the pod is seen (the benchmarks' mode).
- **Fates**: a seeded draw per pod (stable for a given seed, namespace and name) makes a
  fraction ``unready_fraction`` of pods never become Ready (Running, ContainersNotReady) and a
  fraction ``crashloop_fraction`` crash-loop (Running, Ready False, the container waiting in
  CrashLoopBackOff, ``restartCount`` growing every ``restart_interval``).
- **Termination**: a pod deleted with a grace period keeps its ``deletionTimestamp`` for
  ``min(grace, terminate_delay)`` seconds, then the kubelet confirms with
  :meth:`Store.finalize_pod_deletion`.
- **Pause**: :meth:`Kubelet.pause` freezes all of the above (events are still read, and acted
  on at :meth:`Kubelet.resume`) — a node agent that stopped reporting.

The loop keeps one record per pod (its uid, fate and due times) and a heap of wake-ups; each
wake-up re-reads the pod from the store and moves it on, so a stale wake-up is harmless.

Modules: :mod:`~pycm.sim.kubelet.options` (the options and the seeded per-pod draws),
:mod:`~pycm.sim.kubelet.loop` (the loop and the pods' lifecycle),
:mod:`~pycm.sim.kubelet.podstatus` (a running pod's status), :mod:`~pycm.sim.kubelet.nodes`
(node heartbeats and Leases).
"""

from pycm.sim.kubelet.loop import Kubelet
from pycm.sim.kubelet.options import (
    CRASHLOOP,
    NORMAL,
    UNREADY,
    KubeletOptions,
    kubelet_options,
)

__all__ = ["CRASHLOOP", "NORMAL", "UNREADY", "Kubelet", "KubeletOptions", "kubelet_options"]
