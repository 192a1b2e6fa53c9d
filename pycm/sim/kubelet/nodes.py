"""What the kubelet does for the nodes: every heartbeat it refreshes each node's conditions
(``lastHeartbeatTime``; Ready True) and renews the node's Lease in ``kube-node-lease`` (kube's
node status and node lease controllers), and it names the nodes pods are bound to."""

from __future__ import annotations

from pycm.sim.kubelet.options import MANAGER
from pycm.sim.objects import Obj, deep_copy
from pycm.sim.store import Store

__all__ = ["Nodes"]

_NODE_LEASE_NAMESPACE = "kube-node-lease"
_NODE_LEASE_SECONDS = 40  # kube's nodeLeaseDurationSeconds default


class Nodes:
    """The nodes of one store, as their kubelet keeps them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._nodes_res = store.resource("nodes")
        self._leases_res = store.resource("leases", "coordination.k8s.io")

    def names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.store.list_page(self._nodes_res).items]

    def heartbeat(self, now: str) -> None:
        """Every node Ready and its Lease renewed, at ``now`` (a metadata timestamp)."""
        nodes, _ = self.store.list(self._nodes_res)
        for node in nodes:
            new = deep_copy(node)
            for cond in (new.get("status") or {}).get("conditions") or []:
                cond["lastHeartbeatTime"] = now
                if cond.get("type") == "Ready" and cond.get("status") != "True":
                    cond.update(
                        status="True",
                        reason="KubeletReady",
                        message="kubelet is posting ready status",
                        lastTransitionTime=now,
                    )
            old = self.store.peek(self._nodes_res, None, node["metadata"]["name"])
            if old is not None and new != old:
                self.store.replace(self._nodes_res, new, old, manager=MANAGER, subresource="status")
            self._renew_lease(node, now)

    def _renew_lease(self, node: Obj, now: str) -> None:
        name = node["metadata"]["name"]
        micro = now.replace("Z", ".000000Z") if "." not in now else now
        if self.store.peek(self._leases_res, _NODE_LEASE_NAMESPACE, name) is None:
            if self.store.peek(self.store.resource("namespaces"), None, _NODE_LEASE_NAMESPACE):
                self.store.create(
                    self._leases_res,
                    {
                        "metadata": {
                            "name": name,
                            "ownerReferences": [
                                {
                                    "apiVersion": "v1",
                                    "kind": "Node",
                                    "name": name,
                                    "uid": node["metadata"]["uid"],
                                }
                            ],
                        },
                        "spec": {
                            "holderIdentity": name,
                            "leaseDurationSeconds": _NODE_LEASE_SECONDS,
                            "renewTime": micro,
                        },
                    },
                    _NODE_LEASE_NAMESPACE,
                    manager=MANAGER,
                )
            return
        old = self.store.peek(self._leases_res, _NODE_LEASE_NAMESPACE, name)
        if old is None:
            return
        new = deep_copy(old)
        new.setdefault("spec", {})["renewTime"] = micro
        self.store.replace(self._leases_res, new, old, manager=MANAGER)
