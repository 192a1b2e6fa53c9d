"""apps/v1 StatefulSet (kube's ``pkg/registry/apps/statefulset``, ``ValidateStatefulSet``,
``SetDefaults_StatefulSet``).

Defaults: podManagementPolicy ``OrderedReady``, updateStrategy ``RollingUpdate`` with
partition 0, replicas 1, revisionHistoryLimit 10, the PVC retention policy ``Retain``/``Retain``,
the pod template's defaults and each volumeClaimTemplate's ``volumeMode: Filesystem``.
Validation: the selector and template (restartPolicy ``Always``, no activeDeadlineSeconds), the
policies' values, non-negative numbers; an update may change only replicas, ordinals, template,
updateStrategy, revisionHistoryLimit, the PVC retention policy and minReadySeconds. A create
resets the status to ``replicas: 0, availableReplicas: 0``; a spec change bumps the generation.
No controller creates its pods.
"""

from __future__ import annotations

from typing import Any

from pycm.sim import defaults, validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import Printer, age, col, containers_of, name_of, spec_of, status_of

__all__ = ["STRATEGY", "StatefulSetStrategy"]

_UPDATABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


def _default(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = defaults.default(spec, "updateStrategy", {})
    if isinstance(strategy, dict):
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            defaults.default(strategy, "rollingUpdate", {})
        rolling = strategy.get("rollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
            defaults.default(rolling, "partition", 0)
    policy = defaults.default(spec, "persistentVolumeClaimRetentionPolicy", {})
    if isinstance(policy, dict):
        for key in ("whenDeleted", "whenScaled"):
            if not policy.get(key):
                policy[key] = "Retain"
    defaults.default(spec, "replicas", 1)
    defaults.default(spec, "revisionHistoryLimit", 10)
    defaults.pod_template(spec.get("template"))
    for claim in spec.get("volumeClaimTemplates") or []:
        if isinstance(claim, dict) and isinstance(claim.get("spec"), dict):
            defaults.default(claim["spec"], "volumeMode", "Filesystem")


def _spec_causes(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return [validation.required("spec.selector"), validation.required("spec.template")]
    causes: list[Cause] = []
    policy = spec.get("podManagementPolicy")
    if not policy:
        causes.append(validation.required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        causes.append(
            validation.invalid_value(
                "spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"
            )
        )
    strategy = spec.get("updateStrategy") or {}
    stype = strategy.get("type") if isinstance(strategy, dict) else None
    rolling = strategy.get("rollingUpdate") if isinstance(strategy, dict) else None
    if not stype:
        causes.append(validation.required("spec.updateStrategy"))
    elif stype == "OnDelete":
        if rolling is not None:
            causes.append(
                validation.invalid_value(
                    "spec.updateStrategy.rollingUpdate",
                    str(rolling),
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            )
    elif stype == "RollingUpdate":
        if isinstance(rolling, dict):
            causes += validation.non_negative(
                "spec.updateStrategy.rollingUpdate.partition", rolling.get("partition")
            )
    else:
        causes.append(
            validation.invalid_value(
                "spec.updateStrategy", str(stype), "must be 'RollingUpdate' or 'OnDelete'"
            )
        )
    retention = spec.get("persistentVolumeClaimRetentionPolicy") or {}
    for key in ("whenDeleted", "whenScaled"):
        value = retention.get(key) if isinstance(retention, dict) else None
        if value is not None and value not in ("Retain", "Delete"):
            causes.append(
                validation.not_supported(
                    f"spec.persistentVolumeClaimRetentionPolicy.{key}", value, ("Retain", "Delete")
                )
            )
    causes += validation.non_negative("spec.replicas", spec.get("replicas"))
    causes += validation.non_negative("spec.minReadySeconds", spec.get("minReadySeconds"))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, dict):
        causes += validation.non_negative("spec.ordinals.start", ordinals.get("start"))
    claims = [
        str((c.get("metadata") or {}).get("name") or "")
        for c in spec.get("volumeClaimTemplates") or []
        if isinstance(c, dict)
    ]
    causes += validation.selector_template_causes(spec, "spec", "statefulset", claim_volumes=claims)
    template = spec.get("template")
    causes += validation.restart_policy_causes(template, "spec.template", ("Always",))
    if isinstance(template, dict) and (template.get("spec") or {}).get("activeDeadlineSeconds"):
        causes.append(
            validation.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in StatefulSet is not Supported",
            )
        )
    return causes


def _cells(obj: Obj, now: float) -> list[Any]:
    spec, status = spec_of(obj), status_of(obj)
    names, images = containers_of(obj)
    ready = f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}"
    return [name_of(obj), ready, age(obj, now), names, images]


class StatefulSetStrategy(Strategy):
    status_subresource = True
    generation_on_spec = True

    def default(self, obj: Obj) -> None:
        _default(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"replicas": 0, "availableReplicas": 0}

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + _spec_causes(obj.get("spec"))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        fixed_new = {k: v for k, v in new_spec.items() if k not in _UPDATABLE}
        fixed_old = {k: v for k, v in old_spec.items() if k not in _UPDATABLE}
        if fixed_new != fixed_old:
            causes.append(
                validation.forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                    "'template', 'updateStrategy', 'revisionHistoryLimit', "
                    "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                )
            )
        return causes


STRATEGY = StatefulSetStrategy(
    "StatefulSet",
    Printer(
        [
            col("Name", fmt="name"),
            col("Ready"),
            col("Age"),
            col("Containers", priority=1),
            col("Images", priority=1),
        ],
        _cells,
    ),
)
