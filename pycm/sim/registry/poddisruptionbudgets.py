"""policy/v1 PodDisruptionBudget (kube's ``pkg/registry/policy/poddisruptionbudget``,
``ValidatePodDisruptionBudget``).

Validation: ``minAvailable`` or ``maxUnavailable``, not both, each a non-negative integer or a
percentage of at most 100%; the selector valid; ``unhealthyPodEvictionPolicy`` one of
``AlwaysAllow``, ``IfHealthyBudget``. A create resets the status to kube's four zero counters;
a spec change bumps the generation. No disruption controller computes the status, and no
eviction API consults it.
"""

from __future__ import annotations

from typing import Any

from pycm.sim import validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.selectors import match_label_selector_object
from pycm.sim.tables import Printer, age, col, name_of, spec_of, status_of

__all__ = ["STRATEGY", "PodDisruptionBudgetStrategy"]

_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def _spec_causes(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return []
    causes: list[Cause] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        causes.append(
            validation.invalid_value(
                "spec", str(spec), "minAvailable and maxUnavailable cannot be both set"
            )
        )
    for key in ("minAvailable", "maxUnavailable"):
        value = spec.get(key)
        if value is None:
            continue
        more, size = validation.int_or_percent(f"spec.{key}", value)
        causes += more
        if isinstance(value, str) and (size or 0) > 100:
            causes.append(
                validation.invalid_value(f"spec.{key}", value, "must not be greater than 100%")
            )
    selector = spec.get("selector")
    if selector is not None:
        try:
            match_label_selector_object(selector)
        except Exception:  # an unknown operator is a validation error, not a crash
            causes.append(
                validation.invalid_value("spec.selector", str(selector), "invalid selector")
            )
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _POLICIES:
        causes.append(
            validation.not_supported("spec.unhealthyPodEvictionPolicy", policy, _POLICIES)
        )
    return causes


def _cells(obj: Obj, now: float) -> list[Any]:
    spec = spec_of(obj)
    shown = {
        k: "N/A" if spec.get(k) is None else str(spec[k])
        for k in ("minAvailable", "maxUnavailable")
    }
    return [
        name_of(obj),
        shown["minAvailable"],
        shown["maxUnavailable"],
        int(status_of(obj).get("disruptionsAllowed") or 0),
        age(obj, now),
    ]


class PodDisruptionBudgetStrategy(Strategy):
    status_subresource = True
    generation_on_spec = True

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
        }

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + _spec_causes(obj.get("spec"))


STRATEGY = PodDisruptionBudgetStrategy(
    "PodDisruptionBudget",
    Printer(
        [
            col("Name", fmt="name"),
            col("Min Available"),
            col("Max Unavailable"),
            col("Allowed Disruptions", "integer"),
            col("Age"),
        ],
        _cells,
    ),
)
