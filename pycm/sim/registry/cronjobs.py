"""batch/v1 CronJob (kube's ``pkg/registry/batch/cronjob``, ``ValidateCronJob``,
``SetDefaults_CronJob``).

Defaults: concurrencyPolicy ``Allow``, suspend false, successfulJobsHistoryLimit 3,
failedJobsHistoryLimit 1, the job template's pod template defaults. Validation: the name at
most 52 characters (the controller appends an 11-character suffix to name a Job), a
``schedule`` robfig/cron parses (:mod:`pycm.sim.cron`, no ``TZ=`` in it), the policy's value,
non-negative limits, the job template as a Job's spec with no selector (it is generated for
each Job). No controller creates Jobs from it.
"""

from __future__ import annotations

from typing import Any

from pycm.sim import defaults, validation
from pycm.sim.cron import schedule_error
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj, parse_rfc3339
from pycm.sim.registry.jobs import job_spec_causes
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import (
    Printer,
    age,
    col,
    containers_of,
    human_duration,
    name_of,
    selector_of,
    spec_of,
    status_of,
)

__all__ = ["STRATEGY", "CronJobStrategy"]

_POLICIES = ("Allow", "Forbid", "Replace")
MAX_NAME = 52  # 63 (a Job name, a DNS-1035 label) less the 11 characters of "-<timestamp>"


def _default(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    defaults.default(spec, "suspend", False)
    defaults.default(spec, "successfulJobsHistoryLimit", 3)
    defaults.default(spec, "failedJobsHistoryLimit", 1)
    template = spec.get("jobTemplate")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        defaults.pod_template(template["spec"].get("template"))


def _spec_causes(spec: Any, old_spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return [validation.required("spec.schedule"), validation.required("spec.jobTemplate")]
    causes: list[Cause] = []
    schedule = spec.get("schedule")
    if not schedule:
        causes.append(validation.required("spec.schedule"))
    else:
        error = schedule_error(str(schedule))
        if error is not None:
            causes.append(validation.invalid_value("spec.schedule", schedule, error))
        tz_before = isinstance(old_spec, dict) and "TZ" in str(old_spec.get("schedule") or "")
        if "TZ" in str(schedule):
            if spec.get("timeZone") is not None:
                why = "cannot use both timeZone field and TZ or CRON_TZ in schedule"
                causes.append(validation.invalid_value("spec.schedule", schedule, why))
            elif not tz_before:
                why = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
                causes.append(validation.invalid_value("spec.schedule", schedule, why))
    causes += validation.non_negative(
        "spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds")
    )
    policy = spec.get("concurrencyPolicy")
    if not policy:
        causes.append(validation.required("spec.concurrencyPolicy"))
    elif policy not in _POLICIES:
        causes.append(validation.not_supported("spec.concurrencyPolicy", policy, _POLICIES))
    template = spec.get("jobTemplate")
    job_spec = template.get("spec") if isinstance(template, dict) else None
    causes += job_spec_causes(job_spec, "spec.jobTemplate.spec")
    if isinstance(job_spec, dict):
        if job_spec.get("selector") is not None:
            causes.append(
                validation.invalid_value(
                    "spec.jobTemplate.spec.selector",
                    str(job_spec["selector"]),
                    "`selector` will be auto-generated",
                )
            )
        if job_spec.get("manualSelector") is True:
            causes.append(
                validation.not_supported(
                    "spec.jobTemplate.spec.manualSelector", True, ("nil", "false")
                )
            )
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        causes += validation.non_negative(f"spec.{key}", spec.get(key))
    return causes


def _cells(obj: Obj, now: float) -> list[Any]:
    spec, status = spec_of(obj), status_of(obj)
    template = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = containers_of(obj, template.get("template") or {})
    suspend = spec.get("suspend")
    last = status.get("lastScheduleTime")
    return [
        name_of(obj),
        spec.get("schedule", ""),
        "<unset>" if suspend is None else ("True" if suspend else "False"),
        len(status.get("active") or []),
        human_duration(now - parse_rfc3339(str(last))) if last else "<none>",
        age(obj, now),
        names,
        images,
        selector_of(obj, template.get("selector") or {}),
    ]


class CronJobStrategy(Strategy):
    status_subresource = True
    generation_on_spec = True

    def default(self, obj: Obj) -> None:
        _default(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {}

    def _causes(self, obj: Obj, old: Obj | None) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        causes += _spec_causes(obj.get("spec"), (old or {}).get("spec"))
        name = (obj.get("metadata") or {}).get("name")
        if isinstance(name, str) and len(name) > MAX_NAME:
            causes.append(
                validation.invalid_value(
                    "metadata.name", name, f"must be no more than {MAX_NAME} characters"
                )
            )
        return causes

    def validate(self, obj: Obj) -> list[Cause]:
        return self._causes(obj, None)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self._causes(new, old)


STRATEGY = CronJobStrategy(
    "CronJob",
    Printer(
        [
            col("Name", fmt="name"),
            col("Schedule"),
            col("Suspend", "boolean"),
            col("Active", "integer"),
            col("Last Schedule"),
            col("Age"),
            col("Containers", priority=1),
            col("Images", priority=1),
            col("Selector", priority=1),
        ],
        _cells,
    ),
)
