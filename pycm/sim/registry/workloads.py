"""apps/v1 Deployment and ReplicaSet (kube's ``pkg/registry/apps/deployment`` and
``replicaset``): a new object's status is reset (a Deployment's to ``{}``, a ReplicaSet's to
``replicas: 0``, kube's non-omitempty fields); a spec change bumps ``metadata.generation``; the
selector is immutable; ``/status`` writes keep their annotation changes (the deployment
controller writes its revision annotation together with the status).
"""

from __future__ import annotations

from pycm.sim import defaults, validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj, copy_value
from pycm.sim.registry.strategy import Strategy, take_status

__all__ = ["DEPLOYMENT", "REPLICA_SET", "WorkloadStrategy"]


class WorkloadStrategy(Strategy):
    status_subresource = True
    generation_on_spec = True

    def __init__(self, kind: str, initial_status: Obj, field_labels: tuple[str, ...] = ()) -> None:
        super().__init__(kind)
        self.deployment = kind == "Deployment"
        self.initial_status = initial_status
        self.field_labels = field_labels

    def default(self, obj: Obj) -> None:
        defaults.workload(obj, deployment=self.deployment)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = dict(self.initial_status)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        sent = new.get("metadata") or {}
        take_status(new, old)
        # kube's status strategies reset spec and labels but keep metadata changes such as
        # annotations.
        if "annotations" in sent:
            annotations = sent.get("annotations")
            if annotations:
                new["metadata"]["annotations"] = copy_value(annotations)
            else:
                new["metadata"].pop("annotations", None)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + validation.workload_spec_causes(obj, deployment=self.deployment)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(new) + validation.selector_update_causes(new, old)


DEPLOYMENT = WorkloadStrategy("Deployment", {})
REPLICA_SET = WorkloadStrategy("ReplicaSet", {"replicas": 0}, ("status.replicas",))
