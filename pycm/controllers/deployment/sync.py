"""The parts of syncDeployment shared by every strategy (KCM deployment/sync.go): finding or
creating the new ReplicaSet, scaling events (the scaling itself is scaling.py's), history
cleanup, status."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pycm.api.owner import new_controller_ref
from pycm.controllers.deployment import replacement, util
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.scaling import (  # (the object helpers: one copy, there)
    _annotations,
    _meta,
    _name,
    _ns,
    find_active_or_latest,
    replicas_annotations_need_update,
    scale,
    scale_replica_set,
    scale_replica_set_and_record_event,
    set_replicas_annotations,
)
from pycm.controllers.deployment.status import (
    calculate_status,
    replica_counts,
    status_equal,
    status_unchanged,
)
from pycm.kube.errors import NotFound, is_already_exists, is_not_found

# scaling.py's names stay importable from here, where they lived before the split.
__all__ = [
    "cleanup_deployment",
    "find_active_or_latest",
    "get_all_replica_sets_and_sync_revision",
    "get_new_replica_set",
    "is_scaling_event",
    "replicas_annotations_need_update",
    "scale",
    "scale_replica_set",
    "scale_replica_set_and_record_event",
    "set_replicas_annotations",
    "sync",
    "sync_deployment_status",
    "update_status",
]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

# get_new_replica_set's "look the new RS up yourself" default (None means "there is none").
_FIND: Any = object()


def _copy_deployment_annotations(deployment: Obj, rs: Obj) -> bool:
    changed = False
    target = _annotations(rs)
    for key, value in ((deployment.get("metadata") or {}).get("annotations") or {}).items():
        if key in util.ANNOTATIONS_TO_SKIP or target.get(key) == value:
            continue
        target[key] = value
        changed = True
    return changed


def new_replica_set_annotations_need_update(
    deployment: Mapping[str, Any], rs: Mapping[str, Any], new_revision: int
) -> bool:
    """Whether :func:`set_new_replica_set_annotations` (``exists``) would change ``rs``:
    the same decisions, read in place, so a settled RS is not copied to find out."""
    target = (rs.get("metadata") or {}).get("annotations") or {}
    for key, value in ((deployment.get("metadata") or {}).get("annotations") or {}).items():
        if key not in util.ANNOTATIONS_TO_SKIP and target.get(key) != value:
            return True
    old = target.get(util.REVISION_ANNOTATION, "")
    try:
        old_revision = int(old) if old else 0
    except ValueError:
        return False
    return old_revision < new_revision


def set_new_replica_set_annotations(
    deployment: Obj, rs: Obj, new_revision: int, exists: bool
) -> bool:
    changed = _copy_deployment_annotations(deployment, rs)
    annotations = _annotations(rs)
    old = annotations.get(util.REVISION_ANNOTATION, "")
    try:
        old_revision = int(old) if old else 0
    except ValueError:
        return changed
    if old_revision < new_revision:
        annotations[util.REVISION_ANNOTATION] = str(new_revision)
        changed = True
    if not exists:
        replicas = util.replicas_of(deployment)
        if set_replicas_annotations(rs, replicas, replicas + util.max_surge(deployment)):
            changed = True
    return changed


def set_deployment_revision(deployment: Obj, revision: str) -> bool:
    """Set the revision annotation of our copy of the deployment: its metadata is ours, its
    annotations map may still be the cache's — replaced, never changed in place."""
    annotations = (deployment.get("metadata") or {}).get("annotations") or {}
    if annotations.get(util.REVISION_ANNOTATION) == revision:
        return False
    _meta(deployment)["annotations"] = {**annotations, util.REVISION_ANNOTATION: revision}
    return True


async def update_status(ctx: SyncContext, deployment: Obj, status: Obj | None = None) -> Obj:
    """Write ``status`` (default: the one ``deployment`` holds) and carry the new
    resourceVersion and status back into ``deployment`` — our copy — so a later write in the
    same sync does not conflict with this one."""
    body = deployment if status is None else {**deployment, "status": status}
    updated = await ctx.client.update_deployment_status(_ns(deployment), body)
    ctx.status_updates += 1
    new_rv = (updated.get("metadata") or {}).get("resourceVersion")
    if new_rv is not None:
        deployment["metadata"] = {**_meta(deployment), "resourceVersion": new_rv}
    deployment["status"] = updated.get("status", body.get("status"))
    return updated


async def get_new_replica_set(
    ctx: SyncContext,
    deployment: Obj,
    rs_list: Sequence[Obj],
    old_rss: Sequence[Obj],
    create: bool,
    existing: Any = _FIND,
) -> Obj | None:
    """The deployment's new ReplicaSet, its revision and annotations synced; created (with
    the template hash in its name, labels and selector) when missing and ``create``.
    ``existing``: the RS :func:`util.find_new_replica_set` found in ``rs_list``, when the
    caller has looked already (None: there is none)."""
    found: Obj | None = (
        util.find_new_replica_set(deployment, rs_list) if existing is _FIND else existing
    )
    new_revision = util.max_revision(old_rss) + 1
    spec = deployment.get("spec") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    if found is not None:
        # Copy on write: the RS is the cache's. Whether anything changes is read in place;
        # only then are the paths that change (metadata, its annotations, spec) copied.
        existing_meta = found.get("metadata") or {}
        if new_replica_set_annotations_need_update(deployment, found, new_revision) or (
            int((found.get("spec") or {}).get("minReadySeconds") or 0) != min_ready
        ):
            rs: Obj = {
                **found,
                "metadata": {
                    **existing_meta,
                    "annotations": dict(existing_meta.get("annotations") or {}),
                },
            }
            set_new_replica_set_annotations(deployment, rs, new_revision, True)
            rs["spec"] = {**rs["spec"], "minReadySeconds": min_ready}
            return await ctx.client.update_replica_set(_ns(rs), rs)
        needs_update = set_deployment_revision(
            deployment, (existing_meta.get("annotations") or {}).get(util.REVISION_ANNOTATION, "")
        )
        status = deployment.setdefault("status", {})
        if (
            util.has_progress_deadline(deployment)
            and util.get_condition(status, util.PROGRESSING) is None
        ):
            util.set_condition(
                status,
                util.new_condition(
                    util.PROGRESSING,
                    "True",
                    util.FOUND_NEW_RS,
                    f'Found new replica set "{_name(found)}"',
                    ctx.now(),
                ),
            )
            needs_update = True
        if needs_update:
            await update_status(ctx, deployment)
        return found
    if not create:
        return None

    status = deployment.setdefault("status", {})
    collision_count = status.get("collisionCount")
    template = copy.deepcopy(spec.get("template") or {})
    pod_hash = util.compute_hash(template, collision_count)
    template.setdefault("metadata", {})
    template["metadata"]["labels"] = {
        **(template["metadata"].get("labels") or {}),
        util.POD_TEMPLATE_HASH_LABEL: pod_hash,
    }
    selector = copy.deepcopy(spec.get("selector") or {})
    selector["matchLabels"] = {
        **(selector.get("matchLabels") or {}),
        util.POD_TEMPLATE_HASH_LABEL: pod_hash,
    }
    name = f"{_name(deployment)}-{pod_hash}"
    new_rs: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": _ns(deployment),
            "ownerReferences": [new_controller_ref(deployment, "Deployment", "apps/v1")],
            "labels": dict(template["metadata"]["labels"]),
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": min_ready,
            "selector": selector,
            "template": template,
        },
    }
    new_replicas = replacement.new_rs_new_replicas(
        deployment, [*old_rss, new_rs], new_rs, gate=ctx.pod_replacement_policy
    )
    new_rs["spec"]["replicas"] = new_replicas
    set_new_replica_set_annotations(deployment, new_rs, new_revision, False)
    try:
        created = await ctx.client.create_replica_set(_ns(deployment), new_rs)
    except Exception as exc:
        if is_already_exists(exc):
            taken = await _on_name_taken(ctx, deployment, name, exc)
            # KCM goes on with the RS it found as if created, minus the event and the
            # NewReplicaSetCreated condition: only the deployment's revision is synced.
            if set_deployment_revision(deployment, str(new_revision)):
                await update_status(ctx, deployment)
            return taken
        if util.has_progress_deadline(deployment):
            util.set_condition(
                status,
                util.new_condition(
                    util.PROGRESSING,
                    "False",
                    util.FAILED_RS_CREATE,
                    f'Failed to create new replica set "{name}": {exc}',
                    ctx.now(),
                ),
            )
            await update_status(ctx, deployment)
        raise
    ctx.created.append(name)
    if new_replicas > 0:
        ctx.recorder.event(
            deployment,
            "Normal",
            "ScalingReplicaSet",
            f"Scaled up replica set {name} to {new_replicas}",
        )
    needs_update = set_deployment_revision(deployment, str(new_revision))
    if util.has_progress_deadline(deployment):
        util.set_condition(
            status,
            util.new_condition(
                util.PROGRESSING,
                "True",
                util.NEW_RS_CREATED,
                f'Created new replica set "{name}"',
                ctx.now(),
            ),
        )
        needs_update = True
    if needs_update:
        await update_status(ctx, deployment)
    return created


async def _on_name_taken(ctx: SyncContext, deployment: Obj, name: str, exc: Exception) -> Obj:
    """The new RS's name exists (KCM's AlreadyExists case of getNewReplicaSet). Look it up in
    the cache as it is now: not there yet (the informer lags, e.g. backing off after a dropped
    watch) → the cache's NotFound, and the key is requeued; ours (controller UID) with our
    template → it is the new RS; anything else is a hash collision → bump collisionCount so
    the next sync picks another name, and fail. Bumping on a cache miss would give the same
    template a second RS (and break the surge bound): the miss is usually our own RS, created
    by an earlier sync whose status write failed."""
    found = ctx.rs_lister.get(_ns(deployment), name) if ctx.rs_lister is not None else None
    if found is None:
        raise NotFound(
            f'replicaset.apps "{name}" not found in the cache (the create says it exists)',
            code=404,
            reason="NotFound",
        ) from exc
    owner = next(
        (
            r
            for r in (found.get("metadata") or {}).get("ownerReferences") or ()
            if r.get("controller")
        ),
        None,
    )
    uid = (deployment.get("metadata") or {}).get("uid")
    template = (deployment.get("spec") or {}).get("template")
    if (
        owner is not None
        and owner.get("uid") == uid
        and util.equal_ignore_hash(template, (found.get("spec") or {}).get("template"))
    ):
        return found
    status = deployment.setdefault("status", {})
    status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
    await update_status(ctx, deployment)
    log.info(
        "found a hash collision for deployment %s - bumping collisionCount to %d",
        _name(deployment),
        status["collisionCount"],
    )
    raise exc


async def get_all_replica_sets_and_sync_revision(
    ctx: SyncContext, deployment: Obj, rs_list: Sequence[Obj], create: bool
) -> tuple[Obj | None, list[Obj]]:
    """The new RS (revision and annotations synced, created if missing and ``create``) and
    all the old ones.

    KCM calls this twice in one sync (the scaling-event check, then the strategy) on the
    same ReplicaSet list. When a call found the new RS and wrote nothing — no RS update, no
    status update — its answer is a function of the deployment and the list alone, so a
    second call on the same deployment (its metadata, status and conditions the same
    objects, no status written since) and the same list returns it instead of computing it
    again."""
    memo = ctx.synced_revision
    meta, status = deployment.get("metadata"), deployment.get("status")
    if (
        memo is not None
        and memo[0] is rs_list
        and memo[1] is deployment
        and memo[2] is meta
        and memo[3] is status
        and memo[4] == ctx.status_updates
        and memo[5] is (status or {}).get("conditions")
    ):
        return memo[6], list(memo[7])
    updates = ctx.status_updates
    existing = util.find_new_replica_set(deployment, rs_list)
    _, all_old = util.find_old_replica_sets(deployment, rs_list, existing)
    new_rs = await get_new_replica_set(ctx, deployment, rs_list, all_old, create, existing)
    if new_rs is not None and new_rs is existing and ctx.status_updates == updates:
        ctx.synced_revision = (
            rs_list,
            deployment,
            deployment.get("metadata"),
            deployment.get("status"),
            updates,
            (deployment.get("status") or {}).get("conditions"),
            new_rs,
            tuple(all_old),
        )
    return new_rs, all_old


async def is_scaling_event(ctx: SyncContext, deployment: Obj, rs_list: Sequence[Obj]) -> bool:
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, False)
    replicas = util.replicas_of(deployment)
    for rs in util.filter_active_replica_sets([*old_rss, new_rs]):
        desired = util.annotated_replicas(rs, util.DESIRED_REPLICAS_ANNOTATION)
        if desired is not None and desired != replicas:
            return True
    return False


async def cleanup_deployment(ctx: SyncContext, old_rss: Sequence[Obj], deployment: Obj) -> None:
    """Delete old ReplicaSets beyond revisionHistoryLimit (only empty, fully observed ones)."""
    limit = (deployment.get("spec") or {}).get("revisionHistoryLimit")
    if limit is None:
        return
    alive = [rs for rs in old_rss if not (rs.get("metadata") or {}).get("deletionTimestamp")]
    diff = len(alive) - int(limit)
    if diff <= 0:
        return
    alive.sort(key=lambda r: (util.revision(r), util.creation_key(r)))  # ReplicaSetsByRevision
    for rs in alive[:diff]:
        status = rs.get("status") or {}
        meta = rs.get("metadata") or {}
        if (
            int(status.get("replicas") or 0) != 0
            or util.replicas_of(rs) != 0
            or int(meta.get("generation") or 0) > int(status.get("observedGeneration") or 0)
        ):
            continue
        try:
            await ctx.client.delete_replica_set(_ns(rs), _name(rs), str(meta.get("uid", "")))
        except Exception as exc:
            if not is_not_found(exc):
                raise
        ctx.deleted.append(_name(rs))


async def sync_deployment_status(
    ctx: SyncContext, all_rss: Sequence[Obj | None], new_rs: Obj | None, deployment: Obj
) -> None:
    old = deployment.get("status") or {}
    terminating = ctx.terminating_replicas
    counts = replica_counts(all_rss, new_rs, deployment, terminating=terminating)
    if status_unchanged(old, counts, deployment):
        return  # compared first: nothing to build (status.py)
    status = calculate_status(all_rss, new_rs, deployment, ctx.now(), terminating=terminating)
    if status_equal(old, status):
        return
    await update_status(ctx, deployment, status)


async def sync(ctx: SyncContext, deployment: Obj, rs_list: Sequence[Obj]) -> None:
    """Scaling events and paused deployments: scale, clean up when paused, status."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, False)
    await scale(ctx, deployment, new_rs, old_rss)
    if (deployment.get("spec") or {}).get("paused"):
        await cleanup_deployment(ctx, old_rss, deployment)
    await sync_deployment_status(ctx, [*old_rss, new_rs], new_rs, deployment)
