"""apps/v1 Deployment and ReplicaSet (kube's ``pkg/registry/apps/deployment`` and
``replicaset``): a new object's status is reset (a Deployment's to ``{}``, a ReplicaSet's to
``replicas: 0``, kube's non-omitempty fields); a spec change bumps ``metadata.generation``; the
selector is immutable; ``/status`` writes keep their annotation changes (the deployment
controller writes its revision annotation together with the status).

A Deployment's ``spec.podReplacementPolicy`` (KEP-5882) is kube's alpha field behind the
DeploymentPodReplacementPolicy gate (off by default in 1.36): with the gate off it is dropped
from a write unless the stored object already uses it (kube's ``dropDisabledFields``); whenever
it is kept it must be ``TerminationComplete`` or ``TerminationStarted``; nothing defaults it
(unset means the strategy's historical behaviour).
"""

from __future__ import annotations

from pycm.sim import defaults, validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj, copy_value
from pycm.sim.registry.strategy import Strategy, take_status

__all__ = [
    "DEPLOYMENT",
    "DEPLOYMENT_WITH_POD_REPLACEMENT_POLICY",
    "POD_REPLACEMENT_POLICIES",
    "REPLICA_SET",
    "WorkloadStrategy",
]

POD_REPLACEMENT_POLICIES = ("TerminationComplete", "TerminationStarted")
_POLICY = "podReplacementPolicy"


def _policy_in_use(obj: Obj | None) -> bool:
    return obj is not None and (obj.get("spec") or {}).get(_POLICY) is not None


def _drop_disabled_fields(new: Obj, old: Obj | None, gate: bool) -> None:
    """kube's dropDisabledFields: the alpha field goes unless the gate is on or the stored
    object uses it already (a field written while the gate was on is never lost)."""
    spec = new.get("spec")
    if not gate and not _policy_in_use(old) and isinstance(spec, dict):
        spec.pop(_POLICY, None)


class WorkloadStrategy(Strategy):
    status_subresource = True
    generation_on_spec = True

    def __init__(
        self,
        kind: str,
        initial_status: Obj,
        field_labels: tuple[str, ...] = (),
        pod_replacement_policy: bool = False,
    ) -> None:
        super().__init__(kind)
        self.deployment = kind == "Deployment"
        self.initial_status = initial_status
        self.field_labels = field_labels
        # kube-apiserver's DeploymentPodReplacementPolicy gate (a Deployment's only).
        self.pod_replacement_policy = pod_replacement_policy

    def default(self, obj: Obj) -> None:
        defaults.workload(obj, deployment=self.deployment)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = dict(self.initial_status)
        if self.deployment:
            _drop_disabled_fields(obj, None, self.pod_replacement_policy)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        if self.deployment:
            _drop_disabled_fields(new, old, self.pod_replacement_policy)

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
        causes += validation.workload_spec_causes(obj, deployment=self.deployment)
        policy = (obj.get("spec") or {}).get(_POLICY) if self.deployment else None
        if policy is not None and policy not in POD_REPLACEMENT_POLICIES:
            causes.append(
                validation.not_supported(f"spec.{_POLICY}", policy, POD_REPLACEMENT_POLICIES)
            )
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(new) + validation.selector_update_causes(new, old)


DEPLOYMENT = WorkloadStrategy("Deployment", {})
DEPLOYMENT_WITH_POD_REPLACEMENT_POLICY = WorkloadStrategy(
    "Deployment", {}, pod_replacement_policy=True
)
"""The Deployment strategy of an emulator run with DeploymentPodReplacementPolicy on."""
REPLICA_SET = WorkloadStrategy("ReplicaSet", {"replicas": 0}, ("status.replicas",))
