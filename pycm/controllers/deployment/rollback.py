"""Rolling back through the deprecated ``deprecated.deployment.rollback.to`` annotation (KCM
deployment/rollback.go, kept in apps/v1 for round-tripping the old ``spec.rollbackTo``).

The annotation holds a revision number; 0 means the last revision before the current one.
syncDeployment checks it after the paused check and before the scaling check, so no ReplicaSet
is touched while a rollback is pending (a rollback is not re-entrant: the new template gets its
revision only on the next sync). Every path ends with one update of the deployment that
removes the annotation:

- no such revision → Warning ``DeploymentRollbackRevisionNotFound``, annotation cleared;
- the revision's template equals the current one → Warning
  ``DeploymentRollbackTemplateUnchanged``, annotation cleared;
- otherwise the ReplicaSet's pod template (without its pod-template-hash label) and its
  annotations (all but the ones a deployment never copies) become the deployment's, and, once
  the update succeeded, Normal ``DeploymentRollback``.

A value that is not a base-10 integer is ignored, as KCM ignores it: left in place, no event.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pycm.controllers.deployment import util
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.sync import get_all_replica_sets_and_sync_revision

__all__ = [
    "ROLLBACK",
    "ROLLBACK_REVISION_NOT_FOUND",
    "ROLLBACK_TEMPLATE_UNCHANGED",
    "last_revision",
    "rollback",
    "rollback_to",
]

Obj = dict[str, Any]

# Event reasons (KCM deploymentutil's RollbackDone, RollbackRevisionNotFound,
# RollbackTemplateUnchanged).
ROLLBACK = "DeploymentRollback"
ROLLBACK_REVISION_NOT_FOUND = "DeploymentRollbackRevisionNotFound"
ROLLBACK_TEMPLATE_UNCHANGED = "DeploymentRollbackTemplateUnchanged"

# strconv.ParseInt(s, 10, 64): an optional sign and decimal digits, nothing else (Python's
# int() would also take spaces and underscores).
_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _parse_int64(text: str) -> int | None:
    if not _INT.fullmatch(text):
        return None
    value = int(text)
    return value if value in _INT64 else None


def rollback_to(deployment: Mapping[str, Any]) -> int | None:
    """The revision the annotation asks for (getRollbackTo): None when absent, empty or not
    an integer."""
    raw = _annotations(deployment).get(util.ROLLBACK_TO_ANNOTATION)
    if not raw:
        return None
    return _parse_int64(str(raw))


def _revision(rs: Mapping[str, Any]) -> int | None:
    """deploymentutil.Revision: a missing annotation is 0, an unparsable one an error (None)."""
    raw = _annotations(rs).get(util.REVISION_ANNOTATION)
    if raw is None:
        return 0
    return _parse_int64(str(raw))


def last_revision(rss: Sequence[Mapping[str, Any]]) -> int:
    """The second-highest revision among ``rss`` (LastRevision): the one before the current.
    ReplicaSets whose revision does not parse are skipped."""
    highest = second = 0
    for rs in rss:
        v = _revision(rs)
        if v is None:
            continue
        if v >= highest:
            highest, second = v, highest
        elif v > second:
            second = v
    return second


async def rollback(ctx: SyncContext, deployment: Obj, rs_list: Sequence[Obj]) -> None:
    """Roll ``deployment`` (the sync's own copy) back to the annotated revision; in any case
    clear the annotation."""
    target = rollback_to(deployment)
    assert target is not None  # the caller checked
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, True)
    all_rss = [*old_rss, *([new_rs] if new_rs is not None else [])]
    if target == 0:
        target = last_revision(all_rss)
        if target == 0:
            _warn(ctx, deployment, ROLLBACK_REVISION_NOT_FOUND, "Unable to find last revision.")
            await _update_and_clear_rollback_to(ctx, deployment)
            return
    for rs in all_rss:
        if _revision(rs) == target:
            if await _rollback_to_template(ctx, deployment, rs):
                ctx.recorder.event(
                    deployment,
                    "Normal",
                    ROLLBACK,
                    f'Rolled back deployment "{_name(deployment)}" to revision {target}',
                )
            return
    _warn(
        ctx, deployment, ROLLBACK_REVISION_NOT_FOUND, "Unable to find the revision to rollback to."
    )
    await _update_and_clear_rollback_to(ctx, deployment)


async def _rollback_to_template(ctx: SyncContext, deployment: Obj, rs: Mapping[str, Any]) -> bool:
    """Take ``rs``'s template and annotations unless the template is the current one; then
    write the deployment. Returns whether the template changed."""
    spec = deployment.get("spec") or {}
    rs_template = (rs.get("spec") or {}).get("template")
    if util.equal_ignore_hash(spec.get("template"), rs_template):
        _warn(
            ctx,
            deployment,
            ROLLBACK_TEMPLATE_UNCHANGED,
            "The rollback revision contains the same template as current deployment "
            f'"{_name(deployment)}"',
        )
        await _update_and_clear_rollback_to(ctx, deployment)
        return False
    # Copy on write: spec and annotations are still the cache's; both are replaced whole.
    deployment["spec"] = {**spec, "template": _template_without_hash(rs_template)}
    _set_annotations_from(deployment, rs)
    await _update_and_clear_rollback_to(ctx, deployment)
    return True


def _template_without_hash(template: Mapping[str, Any] | None) -> Obj:
    """SetFromReplicaSetTemplate: the RS's pod template, its pod-template-hash label removed
    (an emptied label map is left out, as Go's omitempty leaves it out)."""
    copied: Obj = copy.deepcopy(dict(template or {}))
    meta = copied.get("metadata")
    if isinstance(meta, dict):
        labels = {
            k: v for k, v in (meta.get("labels") or {}).items() if k != util.POD_TEMPLATE_HASH_LABEL
        }
        if labels:
            meta["labels"] = labels
        else:
            meta.pop("labels", None)
    return copied


def _set_annotations_from(deployment: Obj, rs: Mapping[str, Any]) -> None:
    """SetDeploymentAnnotationsTo: the deployment keeps only its own skipped annotations
    (revision, last-applied, …) and takes every other one from the RS — so the rolled-back
    template brings back its change-cause instead of the newer one."""
    kept = {k: v for k, v in _annotations(deployment).items() if k in util.ANNOTATIONS_TO_SKIP}
    kept.update({k: v for k, v in _annotations(rs).items() if k not in util.ANNOTATIONS_TO_SKIP})
    deployment["metadata"] = {**(deployment.get("metadata") or {}), "annotations": kept}


async def _update_and_clear_rollback_to(ctx: SyncContext, deployment: Obj) -> Obj:
    """Remove the annotation and write the whole deployment (one update)."""
    client = ctx.client
    annotations = {
        k: v for k, v in _annotations(deployment).items() if k != util.ROLLBACK_TO_ANNOTATION
    }
    deployment["metadata"] = {**(deployment.get("metadata") or {}), "annotations": annotations}
    meta = deployment["metadata"]
    updated = await client.update_deployment(str(meta.get("namespace", "")), deployment)
    ctx.rolled_back = True
    return updated


def _warn(ctx: SyncContext, deployment: Obj, reason: str, message: str) -> None:
    ctx.recorder.event(deployment, "Warning", reason, message)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))
