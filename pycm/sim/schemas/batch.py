"""batch/v1: Jobs and CronJobs."""

from __future__ import annotations

from pycm.sim.schemas.core import POD_TEMPLATE_SPEC
from pycm.sim.schemas.fields import CONDITION, LEAF, OPAQUE, ListOf, Struct, leaves
from pycm.sim.schemas.meta import LABEL_SELECTOR, OBJECT_META

__all__ = [
    "CRON_JOB_SPEC",
    "JOB_SPEC",
    "JOB_STATUS",
]

JOB_SPEC: Struct = {
    **leaves(
        "activeDeadlineSeconds",
        "backoffLimit",
        "backoffLimitPerIndex",
        "completionMode",
        "completions",
        "managedBy",
        "manualSelector",
        "maxFailedIndexes",
        "parallelism",
        "podReplacementPolicy",
        "suspend",
        "ttlSecondsAfterFinished",
    ),
    "selector": LABEL_SELECTOR,
    "template": POD_TEMPLATE_SPEC,
    **dict.fromkeys(("podFailurePolicy", "scheduling", "successPolicy"), OPAQUE),
}
JOB_STATUS: Struct = {
    **leaves(
        "active",
        "completedIndexes",
        "completionTime",
        "failed",
        "failedIndexes",
        "ready",
        "startTime",
        "succeeded",
        "terminating",
    ),
    "conditions": ListOf({**CONDITION, "lastProbeTime": LEAF}),
    "uncountedTerminatedPods": leaves("failed", "succeeded"),
}
CRON_JOB_SPEC: Struct = {
    **leaves(
        "concurrencyPolicy",
        "failedJobsHistoryLimit",
        "schedule",
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "suspend",
        "timeZone",
    ),
    "jobTemplate": {"metadata": OBJECT_META, "spec": JOB_SPEC},
}
