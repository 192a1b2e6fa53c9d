"""What a fresh cluster holds: its four namespaces and N Ready nodes (sim-node-0, …)."""

from __future__ import annotations

from pycm.sim.discovery import KUBE_VERSION
from pycm.sim.objects import Obj, rfc3339
from pycm.sim.store import Store

__all__ = ["NAMESPACES", "node", "node_name", "seed_cluster"]

NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def node_name(index: int) -> str:
    return f"sim-node-{index}"


def node(index: int, now: str) -> Obj:
    name = node_name(index)

    def condition(type_: str, status: str, reason: str, message: str) -> Obj:
        return {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    resources = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
            },
        },
        "spec": {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]},
        "status": {
            "conditions": [
                condition(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                condition(
                    "DiskPressure",
                    "False",
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure",
                ),
                condition(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                ),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250 + 2}"},
                {"type": "Hostname", "address": name},
            ],
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"sim-{index}",
                "systemUUID": f"sim-{index}",
                "bootID": f"sim-{index}",
                "kernelVersion": "5.15.0-sim",
                "osImage": "pycm sim",
                "containerRuntimeVersion": "sim://1.0.0",
                "kubeletVersion": KUBE_VERSION["gitVersion"],
                "kubeProxyVersion": KUBE_VERSION["gitVersion"],
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def seed_cluster(store: Store, nodes: int) -> None:
    now = rfc3339(store.clock.wall_ns())
    # The managers a cluster's managedFields name: kube-apiserver makes the system namespaces,
    # each node's kubelet registers it.
    namespaces = ({"metadata": {"name": n}} for n in NAMESPACES)
    store.seed(store.resource("namespaces"), namespaces, manager="kube-apiserver")
    store.seed(store.resource("nodes"), (node(i, now) for i in range(nodes)), manager="kubelet")
