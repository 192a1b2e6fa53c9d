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
  is at least terminating (:func:`terminating_is_enough`), not once they are all gone.

Proportional scaling of several ReplicaSets while pods terminate (kube's partial scaling with the
``deployment.kubernetes.io/replicaset-replicas-before-scale`` annotation) is not here: scaling
keeps the historical behaviour under every policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pycm.controllers.deployment import util

__all__ = [
    "POLICIES",
    "TERMINATION_COMPLETE",
    "TERMINATION_STARTED",
    "TerminatingReplicasUnknownError",
    "new_rs_new_replicas",
    "pod_count_with_terminating",
    "policy_of",
    "terminating_is_enough",
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
