"""The feature gates ``pycm run --feature-gates`` knows: KCM's names, stages and 1.36 defaults.

component-base's featuregate, in the small: each gate has a default and a stage; a GA or
deprecated gate may be locked to its default (setting it otherwise is an error, as KCM's
"cannot set feature gate X to false, feature is locked to true"); a gate pycm does not know is
refused ("unrecognized feature gate: X"), never ignored. The table holds only the gates whose
behaviour pycm has: setting any other KCM gate is refused with that line (docs/operations.md
lists them under "Feature gates").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = [
    "BINARY_VERSION",
    "COMPONENT_FLAGZ",
    "COMPONENT_STATUSZ",
    "COORDINATED_LEADER_ELECTION",
    "DEPLOYMENT_POD_REPLACEMENT_POLICY",
    "DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS",
    "FEATURE_GATES",
    "LOGARITHMIC_SCALE_DOWN",
    "MIN_EMULATED_VERSION",
    "POD_DELETION_COST",
    "STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT",
    "STALE_CONTROLLER_CONSISTENCY_REPLICASET",
    "WATCH_LIST_CLIENT",
    "FeatureSpec",
    "feature_gate_conflicts",
    "feature_gates_usage",
]

WATCH_LIST_CLIENT: Final = "WatchListClient"
COMPONENT_STATUSZ: Final = "ComponentStatusz"
COMPONENT_FLAGZ: Final = "ComponentFlagz"
STALE_CONTROLLER_CONSISTENCY_REPLICASET: Final = "StaleControllerConsistencyReplicaSet"
STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT: Final = "StaleControllerConsistencyDeployment"
POD_DELETION_COST: Final = "PodDeletionCost"
LOGARITHMIC_SCALE_DOWN: Final = "LogarithmicScaleDown"
DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS: Final = "DeploymentReplicaSetTerminatingReplicas"
DEPLOYMENT_POD_REPLACEMENT_POLICY: Final = "DeploymentPodReplacementPolicy"
COORDINATED_LEADER_ELECTION: Final = "CoordinatedLeaderElection"

BINARY_VERSION: Final = (1, 36)
"""The KCM release pycm follows (its binary version, as a LeaseCandidate publishes it: 1.36.0)."""
MIN_EMULATED_VERSION: Final = (1, 33)
"""The oldest --emulated-version KCM 1.36 accepts (component-base: the binary's minor - 3)."""


@dataclass(frozen=True)
class FeatureSpec:
    default: bool
    stage: str  # ALPHA, BETA, GA or DEPRECATED, as KCM's --help prints it
    what: str  # what it switches in pycm (the docs' line)
    locked: bool = False  # a GA / deprecated gate locked to its default
    kcm: bool = True  # KCM has it (False: pycm's own, named in KCM's manner)
    # Gates this one cannot be on without (kube declares DeploymentPodReplacementPolicy
    # dependent on DeploymentReplicaSetTerminatingReplicas: its maths reads the ReplicaSets'
    # status.terminatingReplicas).
    requires: tuple[str, ...] = ()


FEATURE_GATES: Final[dict[str, FeatureSpec]] = {
    COMPONENT_FLAGZ: FeatureSpec(
        True, "BETA", "the secure port serves /flagz (KEP-4828, beta and on by default in 1.36)"
    ),
    COMPONENT_STATUSZ: FeatureSpec(
        True, "BETA", "the secure port serves /statusz (KEP-4827, beta and on by default in 1.36)"
    ),
    COORDINATED_LEADER_ELECTION: FeatureSpec(
        False,
        "BETA",
        "with --leader-elect, publish a LeaseCandidate (binary and emulation version) and follow "
        "the API server's choice of leader: never take a free lease, step down when the Lease "
        "names another preferredHolder (KEP-4355; beta and off by default since 1.33)",
    ),
    WATCH_LIST_CLIENT: FeatureSpec(
        True,
        "BETA",
        "informers sync by streaming lists (one watch with sendInitialEvents) instead of paged "
        "lists; client-go's gate, on by default since 1.35",
    ),
    STALE_CONTROLLER_CONSISTENCY_REPLICASET: FeatureSpec(
        True,
        "BETA",
        "the ReplicaSet controller skips a sync while its caches are older than its own last "
        "writes for that ReplicaSet (KEP-5647, on by default since 1.36)",
    ),
    POD_DELETION_COST: FeatureSpec(
        True,
        "BETA",
        "the ReplicaSet controller deletes pods with a lower "
        "controller.kubernetes.io/pod-deletion-cost annotation first (beta since 1.22)",
    ),
    LOGARITHMIC_SCALE_DOWN: FeatureSpec(
        True,
        "GA",
        "the ReplicaSet controller compares ready and creation times of the pods it may delete "
        "in log2 buckets, ties broken by UID (GA and locked since 1.31)",
        locked=True,
    ),
    DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS: FeatureSpec(
        True,
        "BETA",
        "ReplicaSets and Deployments report status.terminatingReplicas, their pods being deleted "
        "that are not yet Succeeded or Failed (alpha 1.33, beta and on by default since 1.35)",
    ),
    DEPLOYMENT_POD_REPLACEMENT_POLICY: FeatureSpec(
        False,
        "ALPHA",
        "Deployments honour spec.podReplacementPolicy: with TerminationComplete a rolling "
        "update counts terminating pods against replicas + maxSurge, with TerminationStarted "
        "a Recreate rollout starts the new pods once the old ones are terminating (KEP-5882; "
        "alpha and off by default in 1.36)",
        requires=(DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS,),
    ),
    STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT: FeatureSpec(
        True,
        "BETA",
        "the same guard in the deployment controller (its ReplicaSet and Deployment writes); "
        "pycm's own: KCM 1.36 guards the ReplicaSet, DaemonSet, StatefulSet and Job "
        "controllers only",
        kcm=False,
    ),
}
"""Every gate pycm knows, by name."""


def feature_gate_conflicts(enabled: Mapping[str, bool]) -> list[str]:
    """Every gate that is on while a gate it requires is off, one line each."""
    problems = []
    for name, spec in FEATURE_GATES.items():
        if not enabled.get(name, spec.default):
            continue
        for needed in spec.requires:
            if not enabled.get(needed, FEATURE_GATES[needed].default):
                problems.append(f"feature gate {name} requires feature gate {needed} to be enabled")
    return problems


def feature_gates_usage() -> str:
    """The flag's help, as KCM's: the gates in name order with their stage and default."""
    lines = [
        "A set of key=value pairs that describe feature gates for alpha/experimental features. "
        "Options are:"
    ]
    for name in sorted(FEATURE_GATES, key=str.lower):
        spec = FEATURE_GATES[name]
        own = ", pycm's own" if not spec.kcm else ""
        default = str(spec.default).lower()
        lines.append(f"{name}=true|false ({spec.stage} - default={default}{own})")
    return "\n".join(lines)
