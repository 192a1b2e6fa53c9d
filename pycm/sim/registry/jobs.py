"""batch/v1 Job (kube's ``pkg/registry/batch/job``, ``ValidateJob``, ``SetDefaults_Job``).

Defaults: parallelism 1 (and completions 1 when neither is set), backoffLimit 6,
completionMode ``NonIndexed``, suspend false, podReplacementPolicy ``TerminatingOrFailed``, the
Job's labels from its template's when it has none, the pod template's defaults. Unless
``manualSelector`` is true the selector is generated on create: the template is labelled
``batch.kubernetes.io/controller-uid``/``controller-uid`` (the Job's uid) and
``batch.kubernetes.io/job-name``/``job-name``, the selector matches the uid (a selector the
client set instead is refused: ``selector` not auto-generated``). Validation: non-negative
numbers, the completion mode (``Indexed`` needs completions), the template (restartPolicy
``OnFailure`` or ``Never``). Selector, template, completion mode and (not ``Indexed``)
completions are immutable. No controller runs its pods.
"""

from __future__ import annotations

from typing import Any

from pycm.sim import defaults, validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj, parse_rfc3339
from pycm.sim.registry.strategy import Strategy
from pycm.sim.selectors import match_label_selector_object
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

__all__ = ["STRATEGY", "JobStrategy", "default_job_spec", "job_spec_causes"]

UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
_COMPLETION_MODES = ("NonIndexed", "Indexed")
_RESTART_POLICIES = ("OnFailure", "Never")


def default_job_spec(spec: Any) -> None:
    """SetDefaults_Job's spec part (a CronJob's jobTemplate gets only the pod template's)."""
    if not isinstance(spec, dict):
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    defaults.default(spec, "parallelism", 1)
    defaults.default(spec, "backoffLimit", 6)
    defaults.default(spec, "completionMode", "NonIndexed")
    defaults.default(spec, "suspend", False)
    default_policy = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    defaults.default(spec, "podReplacementPolicy", default_policy)
    defaults.pod_template(spec.get("template"))


def _generate_selector(obj: Obj) -> None:
    """Label the template with the Job's uid and name, select the uid (kube's
    generateSelector); labels the client set are kept, for validation to judge."""
    m = obj["metadata"]
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    template = spec.get("template")
    if not isinstance(template, dict):
        return
    tmeta = template.setdefault("metadata", {})
    if not isinstance(tmeta, dict):
        return
    labels = tmeta.get("labels")
    if not isinstance(labels, dict):
        labels = tmeta["labels"] = {}
    for key in NAME_LABELS:
        labels.setdefault(key, str(m.get("name") or ""))
    for key in UID_LABELS:
        labels.setdefault(key, str(m.get("uid") or ""))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match = selector.get("matchLabels")
    if not isinstance(match, dict):
        match = selector["matchLabels"] = {}
    match.setdefault(UID_LABELS[0], str(m.get("uid") or ""))


def job_spec_causes(spec: Any, path: str) -> list[Cause]:
    """kube's validateJobSpec: everything but the selector."""
    if not isinstance(spec, dict):
        return [validation.required(f"{path}.template")]
    causes: list[Cause] = []
    for key in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
    ):
        causes += validation.non_negative(f"{path}.{key}", spec.get(key))
    mode = spec.get("completionMode")
    if mode is not None and mode not in _COMPLETION_MODES:
        causes.append(validation.not_supported(f"{path}.completionMode", mode, _COMPLETION_MODES))
    if mode == "Indexed" and spec.get("completions") is None:
        causes.append(
            {
                "reason": "FieldValueRequired",
                "message": "Required value: when completion mode is Indexed",
                "field": f"{path}.completions",
            }
        )
    template = spec.get("template")
    if not isinstance(template, dict):
        return [*causes, validation.required(f"{path}.template")]
    causes += validation.labels_causes(
        f"{path}.template.metadata.labels", (template.get("metadata") or {}).get("labels")
    )
    causes += validation.pod_spec_causes(f"{path}.template.spec", template.get("spec"))
    causes += validation.restart_policy_causes(template, f"{path}.template", _RESTART_POLICIES)
    return causes


def _selector_causes(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        return [validation.required("spec.selector")]
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    try:
        chosen = match_label_selector_object(selector)
    except Exception:  # an unknown operator is a validation error, not a crash
        return [validation.invalid_value("spec.selector", str(selector), "invalid selector")]
    causes: list[Cause] = []
    if spec.get("manualSelector") is not True:
        m = obj["metadata"]
        expected = {UID_LABELS[0]: str(m.get("uid")), NAME_LABELS[0]: str(m.get("name"))}
        for key, want in (
            *((k, expected[UID_LABELS[0]]) for k in UID_LABELS),
            *((k, expected[NAME_LABELS[0]]) for k in NAME_LABELS),
        ):
            if labels.get(key) != want:
                causes.append(
                    validation.invalid_value(
                        f"spec.template.metadata.labels[{key}]",
                        str(labels.get(key, "")),
                        f"must be '{want}'",
                    )
                )
        if not chosen.matches(expected):
            causes.append(
                validation.invalid_value(
                    "spec.selector", str(selector), "`selector` not auto-generated"
                )
            )
    if not chosen.matches(labels):
        causes.append(
            validation.invalid_value(
                "spec.template.metadata.labels",
                ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
                "`selector` does not match template `labels`",
            )
        )
    return causes


def _completions(obj: Obj) -> str:
    spec, status = spec_of(obj), status_of(obj)
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        return f"{succeeded}/{int(spec['completions'])}"
    parallelism = int(spec.get("parallelism") or 0)
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _duration(obj: Obj, now: float) -> str:
    status = status_of(obj)
    start, end = status.get("startTime"), status.get("completionTime")
    if not start:
        return ""
    finished = parse_rfc3339(str(end)) if end else now
    return human_duration(finished - parse_rfc3339(str(start)))


def _cells(obj: Obj, now: float) -> list[Any]:
    names, images = containers_of(obj)
    return [
        name_of(obj),
        _completions(obj),
        _duration(obj, now),
        age(obj, now),
        names,
        images,
        selector_of(obj),
    ]


class JobStrategy(Strategy):
    status_subresource = True
    generation_on_spec = True
    field_labels = ("status.successful",)

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        default_job_spec(spec)
        labels = ((spec or {}).get("template") or {}).get("metadata", {}).get("labels")
        m = obj.get("metadata")
        if isinstance(labels, dict) and labels and isinstance(m, dict) and not m.get("labels"):
            m["labels"] = dict(labels)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {}
        _generate_selector(obj)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + _selector_causes(obj) + job_spec_causes(obj.get("spec"), "spec")

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        for key in ("selector", "template", "completionMode"):
            causes += validation.immutable(f"spec.{key}", new_spec.get(key), old_spec.get(key))
        if new_spec.get("completionMode") != "Indexed":
            causes += validation.immutable(
                "spec.completions", new_spec.get("completions"), old_spec.get("completions")
            )
        return causes


STRATEGY = JobStrategy(
    "Job",
    Printer(
        [
            col("Name", fmt="name"),
            col("Completions"),
            col("Duration"),
            col("Age"),
            col("Containers", priority=1),
            col("Images", priority=1),
            col("Selector", priority=1),
        ],
        _cells,
    ),
)
