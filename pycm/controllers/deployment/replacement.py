"""``spec.podReplacementPolicy`` (KEP-5882, gate ``DeploymentPodReplacementPolicy``, alpha and off
in KCM 1.36): when a Deployment's replacement pods may start, relative to the old pods'
termination. Pure maths over plain dicts, as :mod:`util`.

The policy, as kube's API documents it (the KEP's API section):

- ``TerminationStarted``: replacements start as soon as the old pods start terminating; the
  Deployment's pods may then outnumber ``replicas + maxSurge``.
- ``TerminationComplete``: replacements start only when the old pods are gone; terminating pods
  count against ``replicas + maxSurge``.
- unset (the API server sets no default): the strategy's historical behaviour — a rolling update
  as ``TerminationStarted``, a Recreate rollout as ``TerminationComplete``.

What pycm does with it (each from kube's design; the tables of kube's unit tests that hold them
are in tests/controllers/deployment/test_replacement.py):

- a rolling update under ``TerminationComplete`` sizes the new ReplicaSet's scale-up by
  :func:`pod_count_with_terminating` instead of the ReplicaSets' replicas alone;
- a Recreate rollout under ``TerminationStarted`` starts the new ReplicaSet once every old pod
  is at least terminating (:func:`terminating_is_enough`), not once they are all gone;
- a scaling event under ``TerminationComplete`` (either strategy) scales up only as far as the
  terminating pods leave room (:func:`scale_up_room`), and finishes later (partial scaling,
  below). Scaling down is never held back: no pod is replaced;
- under ``TerminationComplete`` a rollout is not complete while any of the deployment's pods
  terminate (:func:`completion_waits`: the Progressing condition does not reach
  ``NewReplicaSetAvailable``), and fewer terminating pods count as progress
  (:func:`termination_progressed`: Progressing's ``lastUpdateTime`` is refreshed, so the
  progress deadline restarts). Both are the KEP's "Deployment Completion and Progress Changes"
  and the API's ``TerminationComplete`` doc ("will also delay declaring the deployment as
  complete until all of its terminating replicas have been fully terminated"); kube's own code
  and tests for them were not at hand, so the prose is the whole source.

Partial scaling (KEP-3973, "Deployment Scaling Changes and a New Annotation for ReplicaSets";
the cases are kube's sync_test.go TestScale, in
tests/controllers/deployment/test_replacement_scale.py). Each ReplicaSet's share is computed as
kube's proportional scaling computes it, but from the ReplicaSet's size *before* the scaling
event — ``replicaset-replicas-before-scale`` when it is set, else ``spec.replicas`` — over the
``max-replicas`` the deployment had then. The shares are handed out largest ReplicaSet first
(newest first on ties), each cut to the room still left; the leftover of the rounding goes to
the first ReplicaSet, also within the room. A ReplicaSet that reaches the size an unlimited
room would give it is *complete*: it gets the deployment's ``desired-replicas`` and
``max-replicas`` and loses ``replicaset-replicas-before-scale``. Any other is *partial*: it
keeps the pre-scale ``desired-replicas`` and ``max-replicas`` and gets
``replicaset-replicas-before-scale`` (its size before this event) — so the deployment still
looks mid-scale (its ``desired-replicas`` differ from ``spec.replicas``) and the next sync, once
pods have terminated, resumes from the same ratio. During a scale-up no ReplicaSet shrinks
(a share below 0, e.g. a partial ReplicaSet already past its pre-scale proportion, counts as 0)
and during a scale-down none grows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pycm.controllers.deployment import util

__all__ = [
    "POLICIES",
    "TERMINATION_COMPLETE",
    "TERMINATION_STARTED",
    "TerminatingReplicasUnknownError",
    "completion_waits",
    "new_rs_new_replicas",
    "pod_count_with_terminating",
    "policy_of",
    "proportional_sizes",
    "replica_set_fraction",
    "replicas_before_scale",
    "scale_annotations",
    "scale_up_room",
    "scales_partially",
    "terminating_is_enough",
    "termination_progressed",
]

Obj = dict[str, Any]

TERMINATION_STARTED = "TerminationStarted"
TERMINATION_COMPLETE = "TerminationComplete"
POLICIES = (TERMINATION_COMPLETE, TERMINATION_STARTED)


class TerminatingReplicasUnknownError(ValueError):
    """A ReplicaSet its controller has observed reports no ``status.terminatingReplicas``
    (that controller runs with DeploymentReplicaSetTerminatingReplicas off, or something else
    wrote the status): under ``TerminationComplete`` the surge bound cannot be computed, so the
    sync fails and is retried, as KCM's does."""


def policy_of(deployment: Obj, gate: bool) -> str | None:
    """The deployment's policy as the controller honours it: None with the gate off (the
    field is not read then) or when it is unset."""
    if not gate:
        return None
    value = (deployment.get("spec") or {}).get("podReplacementPolicy")
    return value if value in POLICIES else None


def pod_count_with_terminating(rss: Iterable[Obj | None]) -> int:
    """The pods the ReplicaSets may hold right now, their terminating pods included: per
    ReplicaSet max(spec.replicas, status.replicas) + status.terminatingReplicas.

    kube's rolling tests fix the terms: spec 5 / status 6 counts 6, spec 0 / status 1 with 2
    terminating counts 3; a ReplicaSet never observed (observedGeneration 0) without the field
    counts its replicas alone, an observed one without it is an error
    (:class:`TerminatingReplicasUnknownError`)."""
    total = 0
    for rs in rss:
        if rs is None:
            continue
        terminating = util.get_terminating_replica_count([rs])
        if terminating is None:
            meta = rs.get("metadata") or {}
            raise TerminatingReplicasUnknownError(
                f"ReplicaSet {meta.get('namespace', '')}/{meta.get('name', '')} reports no "
                "status.terminatingReplicas: cannot count its terminating pods "
                "(podReplacementPolicy TerminationComplete)"
            )
        total += util.pod_count_upper_bound([rs]) + terminating
    return total


def new_rs_new_replicas(
    deployment: Obj, all_rss: Sequence[Obj | None], new_rs: Obj, *, gate: bool
) -> int:
    """NewRSNewReplicas under the deployment's policy: a rolling update with
    ``TerminationComplete`` leaves room for the terminating pods; everything else is
    :func:`util.new_rs_new_replicas`."""
    if util.is_rolling_update(deployment) and policy_of(deployment, gate) == TERMINATION_COMPLETE:
        return util.new_rs_new_replicas(
            deployment, all_rss, new_rs, current=pod_count_with_terminating(all_rss)
        )
    return util.new_rs_new_replicas(deployment, all_rss, new_rs)


def terminating_is_enough(deployment: Obj, gate: bool) -> bool:
    """Does a Recreate rollout start the new pods once the old ones are terminating (the
    KEP's Recreate under ``TerminationStarted``), rather than once they are gone (unset and
    ``TerminationComplete``, the historical behaviour)?"""
    return policy_of(deployment, gate) == TERMINATION_STARTED


def scales_partially(deployment: Obj, gate: bool) -> bool:
    """Does a scaling event leave room for terminating pods (``TerminationComplete``, under
    either strategy; unset and ``TerminationStarted`` scale as before)?"""
    return policy_of(deployment, gate) == TERMINATION_COMPLETE


def scale_up_room(deployment: Obj, all_rss: Iterable[Obj | None]) -> int:
    """The pods a scale-up may add now: ``replicas + maxSurge`` (0 for a deployment scaled to
    0; a Recreate deployment has no surge) less every pod the ReplicaSets hold, their
    terminating pods included (:func:`pod_count_with_terminating`, which may raise
    :class:`TerminatingReplicasUnknownError`); never below 0. ``all_rss`` must hold the
    ReplicaSets scaled to 0 too: their pods may still be terminating."""
    replicas = util.replicas_of(deployment)
    allowed = replicas + util.max_surge(deployment) if replicas > 0 else 0
    return max(0, allowed - pod_count_with_terminating(all_rss))


def replicas_before_scale(rs: Obj) -> int:
    """The ReplicaSet's size before the scaling event it is still partial in: the
    ``replicaset-replicas-before-scale`` annotation, or ``spec.replicas`` when it carries
    none (or one that is not a size)."""
    before = util.annotated_replicas(rs, util.REPLICAS_BEFORE_SCALE_ANNOTATION)
    return util.replicas_of(rs) if before is None or before < 0 else before


def replica_set_fraction(rs: Obj, deployment: Obj) -> int:
    """:func:`util.get_replica_set_fraction` from the size before the scaling event: the
    pre-scale size times the deployment's ``replicas + maxSurge`` over the ``max-replicas``
    it had then, rounded half away from zero, less the current size."""
    current = util.replicas_of(rs)
    if util.replicas_of(deployment) == 0:
        return -current
    deployment_max = util.replicas_of(deployment) + util.max_surge(deployment)
    max_before = util.annotated_replicas(rs, util.MAX_REPLICAS_ANNOTATION)
    if not max_before:
        # as util.get_replica_set_fraction: the deployment's observed size stands in for a
        # missing or zero annotation; with none, nothing to scale in proportion to.
        max_before = int((deployment.get("status") or {}).get("replicas") or 0)
        if max_before == 0:
            return 0
    target = util.round_half_away(replicas_before_scale(rs) * deployment_max / max_before)
    return target - current


def _share(rs: Obj, deployment: Obj, to_add: int, added: int) -> int:
    """getProportion over :func:`replica_set_fraction`, never against the event's
    direction."""
    if util.replicas_of(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = replica_set_fraction(rs, deployment)
    allowed = to_add - added
    if to_add > 0:
        return max(0, min(fraction, allowed))
    return min(0, max(fraction, allowed))


def _name(rs: Obj) -> str:
    return str((rs.get("metadata") or {}).get("name", ""))


def proportional_sizes(
    deployment: Obj, rss: Sequence[Obj], to_add: int, room: int | None
) -> dict[str, int]:
    """The ReplicaSets' new sizes, by name, for a proportional scaling event adding
    ``to_add`` (below 0: removing) pods. ``rss``: the active ReplicaSets, in the order that
    receives first (larger first; newer first when adding, older when removing). ``room``:
    how many pods the scale-up may add now (:func:`scale_up_room`), None for no limit (the
    sizes the event is heading for); a scale-down ignores it."""
    budget = room if to_add > 0 else None
    sizes: dict[str, int] = {}
    added = 0
    for rs in rss:
        share = _share(rs, deployment, to_add, added)
        if budget is not None:
            share = min(share, budget)
            budget -= share
        sizes[_name(rs)] = util.replicas_of(rs) + share
        added += share
    if to_add != 0 and rss:
        leftover = to_add - added
        if budget is not None:
            leftover = min(leftover, budget)
        first = _name(rss[0])
        sizes[first] = max(0, sizes[first] + leftover)
    return sizes


def scale_annotations(rs: Obj, deployment: Obj, complete: bool) -> dict[str, str]:
    """``rs``'s annotations after a scale under partial scaling: a complete ReplicaSet takes
    the deployment's ``desired-replicas`` and ``max-replicas`` and drops
    ``replicaset-replicas-before-scale``; a partial one keeps its pre-scale pair and records
    its size before the event (kept from an earlier partial step, else its ``spec.replicas``
    now)."""
    annotations = dict((rs.get("metadata") or {}).get("annotations") or {})
    if complete:
        replicas = util.replicas_of(deployment)
        annotations[util.DESIRED_REPLICAS_ANNOTATION] = str(replicas)
        annotations[util.MAX_REPLICAS_ANNOTATION] = str(replicas + util.max_surge(deployment))
        annotations.pop(util.REPLICAS_BEFORE_SCALE_ANNOTATION, None)
    else:
        annotations[util.REPLICAS_BEFORE_SCALE_ANNOTATION] = str(replicas_before_scale(rs))
    return annotations


def _terminating(status: Mapping[str, Any]) -> int | None:
    value = status.get("terminatingReplicas")
    return None if value is None else int(value)


def completion_waits(deployment: Obj, gate: bool, new_status: Mapping[str, Any]) -> bool:
    """Does the deployment's completion wait for terminating pods: ``TerminationComplete``
    and ``new_status`` (the status being built) counts some? An unknown count (no
    ``terminatingReplicas``) holds nothing back."""
    return (
        policy_of(deployment, gate) == TERMINATION_COMPLETE and (_terminating(new_status) or 0) > 0
    )


def termination_progressed(deployment: Obj, gate: bool, new_status: Mapping[str, Any]) -> bool:
    """Under ``TerminationComplete``, does ``new_status`` count fewer terminating pods than
    the deployment's status does now (both known)? A rollout waiting on them progresses."""
    if policy_of(deployment, gate) != TERMINATION_COMPLETE:
        return False
    old = _terminating(deployment.get("status") or {})
    new = _terminating(new_status)
    return old is not None and new is not None and new < old
