"""core/v1 Pod (kube's ``pkg/registry/core/pod/strategy.go``).

A new pod's status is reset to ``Pending`` with its QoS class; updates may not move a bound pod
or change its containers; a DELETE of a pod a kubelet runs waits ``grace_period`` seconds for
the kubelet's confirmation (``Store.finish_graceful_deletion``), and answers with the pod.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pycm.sim import defaults, validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy

if TYPE_CHECKING:
    from pycm.sim.gc import DeleteOptions

__all__ = ["STRATEGY", "PodStrategy", "qos_class"]

_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def qos_class(spec: Any) -> str:
    """kube's GetPodQOS, from the containers' requests and limits."""
    containers = spec.get("containers") or [] if isinstance(spec, dict) else []
    resources = [c.get("resources") or {} for c in containers if isinstance(c, dict)]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        r.get("limits")
        and all(k in r["limits"] for k in ("cpu", "memory"))
        and all((r.get("requests") or r["limits"]).get(k) == r["limits"][k] for k in r["limits"])
        for r in resources
    )
    return "Guaranteed" if guaranteed else "Burstable"


class PodStrategy(Strategy):
    status_subresource = True
    return_deleted_object = True
    field_labels = (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    )

    def default(self, obj: Obj) -> None:
        defaults.pod_spec(obj.get("spec"))
        defaults.pod(obj.get("spec"))

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj.get("spec"))}

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + validation.pod_spec_causes("spec", obj.get("spec"))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(new) + validation.pod_update_causes(new, old)

    def grace_period(self, obj: Obj, options: DeleteOptions) -> int:
        spec = obj.get("spec") or {}
        if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in _TERMINAL_PHASES:
            return 0  # never started, or already finished: nothing for a kubelet to stop
        grace = options.grace_period_seconds
        if grace is None:
            grace = int(spec.get("terminationGracePeriodSeconds") or 0)
        return max(0, grace)

    def deletion_finished(self, obj: Obj) -> bool:
        m = obj["metadata"]
        # A grace period left means the kubelet has not confirmed yet.
        return not m.get("finalizers") and not m.get("deletionGracePeriodSeconds")


STRATEGY = PodStrategy("Pod")
