"""Scaling a deployment's ReplicaSets (KCM deployment/sync.go's scale and scaleReplicaSet):
one ReplicaSet resized with its desired/max-replicas annotations; a scaling event's
proportional scaling across the ReplicaSets; and, under podReplacementPolicy
TerminationComplete, partial scaling that leaves room for terminating pods (the rule is
replacement.py's). Split from sync.py, which finds the ReplicaSets and writes the status."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pycm.controllers.deployment import replacement, util
from pycm.controllers.deployment.context import ScaleAction, SyncContext

__all__ = [
    "find_active_or_latest",
    "replicas_annotations_need_update",
    "scale",
    "scale_replica_set",
    "scale_replica_set_and_record_event",
    "set_replicas_annotations",
]

Obj = dict[str, Any]


def _meta(obj: Obj) -> dict[str, Any]:
    return obj.setdefault("metadata", {})  # type: ignore[no-any-return]


def _annotations(obj: Obj) -> dict[str, str]:
    meta = _meta(obj)
    if meta.get("annotations") is None:
        meta["annotations"] = {}
    return meta["annotations"]  # type: ignore[no-any-return]


def _ns(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace", ""))


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def set_replicas_annotations(rs: Obj, desired: int, max_replicas: int) -> bool:
    annotations = _annotations(rs)
    changed = False
    for key, value in (
        (util.DESIRED_REPLICAS_ANNOTATION, str(desired)),
        (util.MAX_REPLICAS_ANNOTATION, str(max_replicas)),
    ):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(
    rs: Mapping[str, Any], desired: int, max_replicas: int
) -> bool:
    annotations = (rs.get("metadata") or {}).get("annotations") or {}
    return annotations.get(util.DESIRED_REPLICAS_ANNOTATION) != str(desired) or annotations.get(
        util.MAX_REPLICAS_ANNOTATION
    ) != str(max_replicas)


async def scale_replica_set(
    ctx: SyncContext, rs: Mapping[str, Any], new_scale: int, deployment: Obj, operation: str
) -> tuple[bool, Obj]:
    old_scale = util.replicas_of(rs)
    size_needs_update = old_scale != new_scale
    replicas = util.replicas_of(deployment)
    max_replicas = replicas + util.max_surge(deployment)
    # With the gate on, a full scale ends any partial scaling the RS was in (replacement.py):
    # its pre-scale size goes with the pre-scale desired/max pair.
    before_scale = ctx.pod_replacement_policy and util.REPLICAS_BEFORE_SCALE_ANNOTATION in (
        (rs.get("metadata") or {}).get("annotations") or {}
    )
    if (
        not size_needs_update
        and not before_scale
        and not replicas_annotations_need_update(rs, replicas, max_replicas)
    ):
        return False, dict(rs)
    rs_copy: Obj = copy.deepcopy(dict(rs))
    rs_copy["spec"]["replicas"] = new_scale
    set_replicas_annotations(rs_copy, replicas, max_replicas)
    if before_scale:
        _annotations(rs_copy).pop(util.REPLICAS_BEFORE_SCALE_ANNOTATION, None)
    updated = await ctx.client.update_replica_set(_ns(rs_copy), rs_copy)
    if size_needs_update:
        _scaled(ctx, deployment, rs, old_scale, new_scale, operation)
    return size_needs_update, updated


def _scaled(
    ctx: SyncContext,
    deployment: Obj,
    rs: Mapping[str, Any],
    old_scale: int,
    new_scale: int,
    operation: str,
) -> None:
    """Note a ReplicaSet's scale change and record KCM's ScalingReplicaSet event for it."""
    ctx.scaled.append(ScaleAction(_name(rs), old_scale, new_scale))
    ctx.recorder.event(
        deployment,
        "Normal",
        "ScalingReplicaSet",
        f"Scaled {operation} replica set {_name(rs)} to {new_scale} from {old_scale}",
    )


async def scale_replica_set_and_record_event(
    ctx: SyncContext, rs: Mapping[str, Any], new_scale: int, deployment: Obj
) -> tuple[bool, Obj]:
    current = util.replicas_of(rs)
    if current == new_scale:
        return False, dict(rs)
    operation = "up" if current < new_scale else "down"
    return await scale_replica_set(ctx, rs, new_scale, deployment, operation)


def _by_creation(rs: Mapping[str, Any]) -> tuple[float, str]:
    return util.creation_key(rs)


def _older_first(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    """ReplicaSetsByCreationTimestamp: older first, then by name."""
    ka, kb = _by_creation(a), _by_creation(b)
    return -1 if ka < kb else (1 if ka > kb else 0)


def _larger_first(tie: Callable[[Mapping[str, Any], Mapping[str, Any]], int]) -> Any:
    def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
        ra, rb = util.replicas_of(a), util.replicas_of(b)
        if ra != rb:
            return -1 if ra > rb else 1
        return tie(a, b)

    return functools.cmp_to_key(compare)


# ReplicaSetsBySizeNewer / ReplicaSetsBySizeOlder: larger first; ties newer / older first.
_BY_SIZE_NEWER = _larger_first(lambda a, b: _older_first(b, a))
_BY_SIZE_OLDER = _larger_first(_older_first)


def find_active_or_latest(new_rs: Obj | None, old_rss: Sequence[Obj]) -> Obj | None:
    if new_rs is None and not old_rss:
        return None
    newest_first = sorted(old_rss, key=_by_creation, reverse=True)
    active = util.filter_active_replica_sets([*newest_first, new_rs])
    if not active:
        return new_rs if new_rs is not None else newest_first[0]
    if len(active) == 1:
        return active[0]
    return None


def _get_proportion(rs: Obj, deployment: Obj, to_add: int, added: int) -> int:
    if util.replicas_of(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = util.get_replica_set_fraction(rs, deployment)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


async def scale(
    ctx: SyncContext, deployment: Obj, new_rs: Obj | None, old_rss: Sequence[Obj]
) -> list[ScaleAction]:
    """Scale the ReplicaSets to the deployment's size: the only active one directly; a
    saturated new RS → old ones to 0; otherwise proportionally, leftovers to the largest
    (newest on ties when adding, oldest when removing). Returns what it scaled. Under
    podReplacementPolicy TerminationComplete, :func:`_scale_partially`."""
    if replacement.scales_partially(deployment, ctx.pod_replacement_policy):
        return await _scale_partially(ctx, deployment, new_rs, old_rss)
    before = len(ctx.scaled)
    replicas = util.replicas_of(deployment)
    active_or_latest = find_active_or_latest(new_rs, old_rss)
    if active_or_latest is not None:
        if util.replicas_of(active_or_latest) != replicas:
            await scale_replica_set_and_record_event(ctx, active_or_latest, replicas, deployment)
        return ctx.scaled[before:]
    if util.is_saturated(deployment, new_rs):
        for old in util.filter_active_replica_sets(old_rss):
            await scale_replica_set_and_record_event(ctx, old, 0, deployment)
        return ctx.scaled[before:]
    if not util.is_rolling_update(deployment):
        return ctx.scaled[before:]
    all_rss = util.filter_active_replica_sets([*old_rss, new_rs])
    allowed = replicas + util.max_surge(deployment) if replicas > 0 else 0
    to_add = allowed - util.get_replica_count(all_rss)
    operation = ""
    if to_add > 0:
        all_rss.sort(key=_BY_SIZE_NEWER)
        operation = "up"
    elif to_add < 0:
        all_rss.sort(key=_BY_SIZE_OLDER)
        operation = "down"
    added = 0
    sizes: dict[str, int] = {}
    for rs in all_rss:
        if to_add != 0:
            proportion = _get_proportion(rs, deployment, to_add, added)
            sizes[_name(rs)] = util.replicas_of(rs) + proportion
            added += proportion
        else:
            sizes[_name(rs)] = util.replicas_of(rs)
    if to_add != 0 and all_rss:
        first = _name(all_rss[0])
        sizes[first] = max(0, sizes[first] + (to_add - added))
    for rs in all_rss:
        await scale_replica_set(ctx, rs, sizes[_name(rs)], deployment, operation)
    return ctx.scaled[before:]


async def _resize_partially(
    ctx: SyncContext, rs: Obj, new_scale: int, deployment: Obj, complete: bool
) -> None:
    """scaleReplicaSet under partial scaling: the size and the annotations
    :func:`replacement.scale_annotations` gives (``complete`` or not), written when either
    changes."""
    old_scale = util.replicas_of(rs)
    annotations = replacement.scale_annotations(rs, deployment, complete)
    if old_scale == new_scale and annotations == (
        (rs.get("metadata") or {}).get("annotations") or {}
    ):
        return
    rs_copy: Obj = copy.deepcopy(dict(rs))
    rs_copy["spec"]["replicas"] = new_scale
    _meta(rs_copy)["annotations"] = annotations
    await ctx.client.update_replica_set(_ns(rs_copy), rs_copy)
    if old_scale != new_scale:
        operation = "up" if new_scale > old_scale else "down"
        _scaled(ctx, deployment, rs, old_scale, new_scale, operation)


async def _scale_partially(
    ctx: SyncContext, deployment: Obj, new_rs: Obj | None, old_rss: Sequence[Obj]
) -> list[ScaleAction]:
    """:func:`scale` under TerminationComplete (KEP-3973; the rule is replacement.py's): a
    scale-up adds no more pods than the terminating ones leave room for, and each ReplicaSet
    that falls short of its size for this event is left partial, to be finished by a later
    sync. The room is counted (and an unknown terminating count fails the sync) before any
    write."""
    before = len(ctx.scaled)
    replicas = util.replicas_of(deployment)
    every_rs = [*old_rss, new_rs]
    active_or_latest = find_active_or_latest(new_rs, old_rss)
    if active_or_latest is not None:
        current = util.replicas_of(active_or_latest)
        size = replicas
        if replicas > current:
            size = current + min(
                replicas - current, replacement.scale_up_room(deployment, every_rs)
            )
        await _resize_partially(ctx, active_or_latest, size, deployment, size == replicas)
        return ctx.scaled[before:]
    if util.is_saturated(deployment, new_rs):
        for old in util.filter_active_replica_sets(old_rss):
            await _resize_partially(ctx, old, 0, deployment, True)
        return ctx.scaled[before:]
    if not util.is_rolling_update(deployment):
        return ctx.scaled[before:]
    all_rss = util.filter_active_replica_sets(every_rs)
    allowed = replicas + util.max_surge(deployment) if replicas > 0 else 0
    to_add = allowed - util.get_replica_count(all_rss)
    room: int | None = None
    if to_add > 0:
        all_rss.sort(key=_BY_SIZE_NEWER)
        room = replacement.scale_up_room(deployment, every_rs)
    elif to_add < 0:
        all_rss.sort(key=_BY_SIZE_OLDER)
    heading_for = replacement.proportional_sizes(deployment, all_rss, to_add, None)
    sizes = (
        heading_for
        if room is None
        else replacement.proportional_sizes(deployment, all_rss, to_add, room)
    )
    for rs in all_rss:
        name = _name(rs)
        await _resize_partially(ctx, rs, sizes[name], deployment, sizes[name] == heading_for[name])
    return ctx.scaled[before:]
