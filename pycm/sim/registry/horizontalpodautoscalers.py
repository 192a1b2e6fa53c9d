"""autoscaling/v2 HorizontalPodAutoscaler (kube's
``pkg/registry/autoscaling/horizontalpodautoscaler``, ``ValidateHorizontalPodAutoscaler``).

Defaults: minReplicas 1; no metrics means CPU at 80% average utilization. A create resets the
status to ``desiredReplicas: 0``. Validation: ``scaleTargetRef`` kind and name, minReplicas at
least 1, maxReplicas positive and not below minReplicas, each metric's type one kube knows. No
autoscaler reads metrics or scales anything.
"""

from __future__ import annotations

from typing import Any

from pycm.sim import validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import Printer, age, col, name_of, spec_of, status_of

__all__ = ["STRATEGY", "HorizontalPodAutoscalerStrategy"]

METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")


def _default(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        target = {"type": "Utilization", "averageUtilization": 80}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]


def _spec_causes(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return [validation.required("spec.scaleTargetRef.kind")]
    causes: list[Cause] = []
    ref = spec.get("scaleTargetRef") or {}
    for key in ("kind", "name"):
        value = ref.get(key) if isinstance(ref, dict) else None
        if not value:
            causes.append(validation.required(f"spec.scaleTargetRef.{key}"))
        elif "/" in str(value) or str(value) in (".", ".."):
            causes.append(
                validation.invalid_value(
                    f"spec.scaleTargetRef.{key}",
                    value,
                    "may not contain '/'" if "/" in str(value) else f"may not be '{value}'",
                )
            )
    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    if isinstance(low, int) and low < 1:
        causes.append(
            validation.invalid_value("spec.minReplicas", low, "must be greater than or equal to 1")
        )
    if not isinstance(high, int) or isinstance(high, bool) or high < 1:
        causes.append(validation.invalid_value("spec.maxReplicas", high, "must be greater than 0"))
    elif isinstance(low, int) and low > high:
        causes.append(
            validation.invalid_value(
                "spec.maxReplicas", high, "must be greater than or equal to `minReplicas`"
            )
        )
    for i, metric in enumerate(spec.get("metrics") or []):
        kind = metric.get("type") if isinstance(metric, dict) else None
        if not kind:
            causes.append(validation.required(f"spec.metrics[{i}].type"))
        elif kind not in METRIC_TYPES:
            causes.append(validation.not_supported(f"spec.metrics[{i}].type", kind, METRIC_TYPES))
    return causes


def _targets(spec: dict[str, Any]) -> str:
    shown = []
    for metric in spec.get("metrics") or []:
        if not isinstance(metric, dict):
            continue
        source = metric.get(_SOURCE.get(str(metric.get("type")), "")) or {}
        target = source.get("target") or {}
        if target.get("averageUtilization") is not None:
            shown.append(f"<unknown>/{target['averageUtilization']}%")
        else:
            value = target.get("averageValue") or target.get("value") or ""
            shown.append(f"<unknown>/{value}")
    return ", ".join(shown) or "<none>"


_SOURCE = {
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "Pods": "pods",
    "Object": "object",
    "External": "external",
}


def _cells(obj: Obj, now: float) -> list[Any]:
    spec, status = spec_of(obj), status_of(obj)
    ref = spec.get("scaleTargetRef") or {}
    return [
        name_of(obj),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _targets(spec),
        spec.get("minReplicas") if spec.get("minReplicas") is not None else "<unset>",
        int(spec.get("maxReplicas") or 0),
        int(status.get("currentReplicas") or 0),
        age(obj, now),
    ]


class HorizontalPodAutoscalerStrategy(Strategy):
    status_subresource = True

    def default(self, obj: Obj) -> None:
        _default(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"desiredReplicas": 0}

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + _spec_causes(obj.get("spec"))


STRATEGY = HorizontalPodAutoscalerStrategy(
    "HorizontalPodAutoscaler",
    Printer(
        [
            col("Name", fmt="name"),
            col("Reference"),
            col("Targets"),
            col("MinPods", "integer"),
            col("MaxPods", "integer"),
            col("Replicas", "integer"),
            col("Age"),
        ],
        _cells,
    ),
)
