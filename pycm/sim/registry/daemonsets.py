"""apps/v1 DaemonSet (kube's ``pkg/registry/apps/daemonset``, ``ValidateDaemonSet``,
``SetDefaults_DaemonSet``).

Defaults: updateStrategy ``RollingUpdate`` with maxUnavailable 1 and maxSurge 0,
revisionHistoryLimit 10, the pod template's defaults. Validation: the selector and template
(restartPolicy ``Always``, no activeDeadlineSeconds), the update strategy (``RollingUpdate``
needs its parameters, not both 0), minReadySeconds; the selector is immutable. A create resets
the status to kube's four zero counters; a spec change bumps the generation. No controller
places its pods.
"""

from __future__ import annotations

from typing import Any

from pycm.sim import defaults, validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import (
    Printer,
    age,
    col,
    containers_of,
    name_of,
    selector_of,
    spec_of,
    status_of,
)

__all__ = ["STRATEGY", "DaemonSetStrategy"]


def _default(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    strategy = defaults.default(spec, "updateStrategy", {})
    if isinstance(strategy, dict):
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = defaults.default(strategy, "rollingUpdate", {})
            if isinstance(rolling, dict):
                defaults.default(rolling, "maxUnavailable", 1)
                defaults.default(rolling, "maxSurge", 0)
    defaults.default(spec, "revisionHistoryLimit", 10)
    defaults.pod_template(spec.get("template"))


def _strategy_causes(strategy: Any) -> list[Cause]:
    field = "spec.updateStrategy"
    stype = strategy.get("type") if isinstance(strategy, dict) else None
    if stype == "OnDelete":
        return []
    if stype != "RollingUpdate":
        return [validation.not_supported(field, stype or "", ("RollingUpdate", "OnDelete"))]
    rolling = strategy.get("rollingUpdate")
    if not isinstance(rolling, dict):
        return [validation.required(f"{field}.rollingUpdate")]
    causes: list[Cause] = []
    sizes: dict[str, float | None] = {}
    for key in ("maxUnavailable", "maxSurge"):
        value = rolling.get(key)
        if value is None:
            sizes[key] = 0.0
            continue
        more, sizes[key] = validation.int_or_percent(f"{field}.rollingUpdate.{key}", value)
        causes += more
        if isinstance(value, str) and (sizes[key] or 0) > 100:
            causes.append(
                validation.invalid_value(
                    f"{field}.rollingUpdate.{key}", value, "must not be greater than 100%"
                )
            )
    if sizes.get("maxUnavailable") == 0 and sizes.get("maxSurge") == 0:
        causes.append(
            validation.invalid_value(
                f"{field}.rollingUpdate.maxUnavailable",
                rolling.get("maxUnavailable"),
                "may not be 0 when `maxSurge` is 0",
            )
        )
    return causes


def _spec_causes(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return [validation.required("spec.selector"), validation.required("spec.template")]
    causes = validation.selector_template_causes(spec, "spec", "daemonset")
    template = spec.get("template")
    causes += validation.restart_policy_causes(template, "spec.template", ("Always",))
    if isinstance(template, dict) and (template.get("spec") or {}).get("activeDeadlineSeconds"):
        causes.append(
            validation.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in DaemonSet is not Supported",
            )
        )
    causes += validation.non_negative("spec.minReadySeconds", spec.get("minReadySeconds"))
    causes += validation.non_negative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    return causes + _strategy_causes(spec.get("updateStrategy"))


def _cells(obj: Obj, now: float) -> list[Any]:
    spec, status = spec_of(obj), status_of(obj)
    names, images = containers_of(obj)
    node_selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    return [
        name_of(obj),
        int(status.get("desiredNumberScheduled") or 0),
        int(status.get("currentNumberScheduled") or 0),
        int(status.get("numberReady") or 0),
        int(status.get("updatedNumberScheduled") or 0),
        int(status.get("numberAvailable") or 0),
        ",".join(f"{k}={v}" for k, v in sorted(node_selector.items())) or "<none>",
        age(obj, now),
        names,
        images,
        selector_of(obj),
    ]


class DaemonSetStrategy(Strategy):
    status_subresource = True
    generation_on_spec = True

    def default(self, obj: Obj) -> None:
        _default(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        }

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + _spec_causes(obj.get("spec"))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(new) + validation.selector_update_causes(new, old)


STRATEGY = DaemonSetStrategy(
    "DaemonSet",
    Printer(
        [
            col("Name", fmt="name"),
            col("Desired", "integer"),
            col("Current", "integer"),
            col("Ready", "integer"),
            col("Up-to-date", "integer"),
            col("Available", "integer"),
            col("Node Selector"),
            col("Age"),
            col("Containers", priority=1),
            col("Images", priority=1),
            col("Selector", priority=1),
        ],
        _cells,
    ),
)
