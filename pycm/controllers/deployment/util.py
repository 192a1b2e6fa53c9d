# Over 500 lines, one concept: KCM's deployment_util.go, pure maths.
"""The deployment controller's pure maths (KCM pkg/controller/deployment/util), over plain dicts.

Nothing here does I/O or reads a clock: time comes in as ``now`` (Unix seconds). Names follow
KCM's in snake_case. Int-or-percent values are ints or strings such as ``"25%"``.

Objects are read as KCM reads them: already defaulted by the API server, which sets a
Deployment's strategy type (RollingUpdate), maxSurge and maxUnavailable (25% each) and replicas
(1). A missing maxSurge / maxUnavailable therefore means 0 here, as in KCM's
``ResolveFenceposts``; a caller holding a deployment that never went through an API server (a
manifest, a fixture) defaults it first with :func:`with_api_defaults`.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import orjson

from pycm.api.meta import parse_time

__all__ = [
    "ANNOTATIONS_TO_SKIP",
    "DEFAULT_MAX_SURGE",
    "DEFAULT_MAX_UNAVAILABLE",
    "DESIRED_REPLICAS_ANNOTATION",
    "MAX_REPLICAS_ANNOTATION",
    "POD_TEMPLATE_HASH_LABEL",
    "REPLICAS_BEFORE_SCALE_ANNOTATION",
    "REVISION_ANNOTATION",
    "annotated_replicas",
    "compute_hash",
    "creation_key",
    "deployment_complete",
    "deployment_progressing",
    "deployment_timed_out",
    "equal_ignore_hash",
    "filter_active_replica_sets",
    "find_new_replica_set",
    "find_old_replica_sets",
    "get_available_replica_count",
    "get_condition",
    "get_ready_replica_count",
    "get_replica_count",
    "get_replica_set_fraction",
    "get_status_replica_count",
    "get_terminating_replica_count",
    "has_progress_deadline",
    "int_or_percent",
    "is_rolling_update",
    "is_saturated",
    "max_revision",
    "max_surge",
    "max_unavailable",
    "min_available",
    "new_condition",
    "new_rs_new_replicas",
    "pod_count_upper_bound",
    "replicas_of",
    "resolve_fenceposts",
    "revision",
    "round_half_away",
    "set_condition",
    "with_api_defaults",
]

Obj = Mapping[str, Any]
R = TypeVar("R", bound=Mapping[str, Any])

REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
CHANGE_CAUSE_ANNOTATION = "kubernetes.io/change-cause"
ROLLBACK_TO_ANNOTATION = "deprecated.deployment.rollback.to"
# A ReplicaSet's spec.replicas before a scaling event that could not finish at once under
# podReplacementPolicy TerminationComplete (KEP-3973): kept, with the pre-scale desired and max
# annotations, until its partial scaling completes (replacement.py).
REPLICAS_BEFORE_SCALE_ANNOTATION = "deployment.kubernetes.io/replicaset-replicas-before-scale"
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
# Annotations a deployment never copies to its ReplicaSets, nor a rollback from one back to
# the deployment (KCM's annotationsToSkip).
ANNOTATIONS_TO_SKIP = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION_ANNOTATION,
        REVISION_HISTORY_ANNOTATION,
        DESIRED_REPLICAS_ANNOTATION,
        MAX_REPLICAS_ANNOTATION,
        REPLICAS_BEFORE_SCALE_ANNOTATION,
        ROLLBACK_TO_ANNOTATION,
    }
)
DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"
MAX_INT32 = 2**31 - 1

# Condition types and reasons (KCM's names).
AVAILABLE = "Available"
PROGRESSING = "Progressing"
REPLICA_FAILURE = "ReplicaFailure"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
FAILED_RS_CREATE = "ReplicaSetCreateError"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"


def round_half_away(value: float) -> int:
    """Go's math.Round: halves round away from zero (Python's round() rounds to even)."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def int_or_percent(value: int | str | None, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if value is None:
        raise ValueError("nil value for IntOrString")
    if isinstance(value, bool):
        raise ValueError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        try:
            return int(text)
        except ValueError:
            raise ValueError(
                f"invalid value for IntOrString: invalid type: string is not a percentage: {text!r}"
            ) from None
    try:
        percent = int(text[:-1])
    except ValueError:
        raise ValueError(f"invalid value {text!r}: must be an integer percentage") from None
    scaled = percent * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def replicas_of(obj: Obj) -> int:
    """``spec.replicas`` of a Deployment or ReplicaSet (the API default is 1)."""
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _rolling(deployment: Obj) -> Mapping[str, Any]:
    strategy = (deployment.get("spec") or {}).get("strategy") or {}
    return strategy.get("rollingUpdate") or {}


def is_rolling_update(deployment: Obj) -> bool:
    """The strategy type is RollingUpdate (IsRollingUpdate; a missing type is the API's to
    default, see :func:`with_api_defaults`)."""
    strategy = (deployment.get("spec") or {}).get("strategy") or {}
    return bool(strategy.get("type") == "RollingUpdate")


def with_api_defaults(deployment: Obj) -> dict[str, Any]:
    """``deployment`` as kube-apiserver's defaulting leaves it, for a caller holding one that
    never went through an API server (a manifest, a test fixture): replicas 1, strategy type
    RollingUpdate, and for a rolling update maxSurge and maxUnavailable 25% each. ``null``
    counts as absent, as a nil pointer does in Go. A copy where anything changes; the input
    (maybe a cached object) is never modified.

    Objects read from an API server are defaulted already and need no call."""
    spec: dict[str, Any] = dict(deployment.get("spec") or {})
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy: dict[str, Any] = dict(spec.get("strategy") or {})
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling: dict[str, Any] = dict(strategy.get("rollingUpdate") or {})
        if rolling.get("maxUnavailable") is None:
            rolling["maxUnavailable"] = DEFAULT_MAX_UNAVAILABLE
        if rolling.get("maxSurge") is None:
            rolling["maxSurge"] = DEFAULT_MAX_SURGE
        strategy["rollingUpdate"] = rolling
    spec["strategy"] = strategy
    return {**deployment, "spec": spec}


def resolve_fenceposts(
    max_surge_value: int | str | None, max_unavailable_value: int | str | None, desired: int
) -> tuple[int, int]:
    """(surge, unavailable): surge rounds up, unavailable down; both 0 → unavailable 1. A
    missing (None) value counts as 0, as KCM's nil pointer does (``ValueOrDefault(…, 0)``):
    the 25% defaults are the API server's, applied before a controller reads the object.

    Pure in its values, and every sync asks it for the same few: remembered per value."""
    try:
        return _fenceposts(max_surge_value, max_unavailable_value, desired)
    except TypeError:  # an unhashable value: not a valid IntOrString, say so as uncached
        return _resolve_fenceposts(max_surge_value, max_unavailable_value, desired)


def _resolve_fenceposts(
    max_surge_value: int | str | None, max_unavailable_value: int | str | None, desired: int
) -> tuple[int, int]:
    surge = int_or_percent(0 if max_surge_value is None else max_surge_value, desired, True)
    unavailable = int_or_percent(
        0 if max_unavailable_value is None else max_unavailable_value, desired, False
    )
    if surge == 0 and unavailable == 0:
        # Validation forbids both zero; a 0/0 from rounding still has to make progress.
        unavailable = 1
    return surge, unavailable


# typed: True and 1 (or 1.0) are different values here — a bool is no IntOrString.
_fenceposts = functools.lru_cache(maxsize=256, typed=True)(_resolve_fenceposts)


def max_unavailable(deployment: Obj) -> int:
    replicas = replicas_of(deployment)
    if not is_rolling_update(deployment) or replicas == 0:
        return 0
    rolling = _rolling(deployment)
    _, unavailable = resolve_fenceposts(
        rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas
    )
    return min(unavailable, replicas)


def max_surge(deployment: Obj) -> int:
    if not is_rolling_update(deployment):
        return 0
    rolling = _rolling(deployment)
    surge, _ = resolve_fenceposts(
        rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas_of(deployment)
    )
    return surge


def min_available(deployment: Obj) -> int:
    if not is_rolling_update(deployment):
        return 0
    return replicas_of(deployment) - max_unavailable(deployment)


def get_replica_count(rss: Iterable[Obj | None]) -> int:
    """Sum of spec.replicas (GetReplicaCountForReplicaSets)."""
    return sum(replicas_of(rs) for rs in rss if rs is not None)


def pod_count_upper_bound(rss: Iterable[Obj | None]) -> int:
    """Σ max(spec.replicas, status.replicas): the pods the ReplicaSets may have right now.

    KCM sizes the new ReplicaSet's scale-up by Σ spec.replicas alone; an old ReplicaSet just
    scaled down still has the pods its ReplicaSet controller has not deleted yet (its
    status.replicas), and when those deletes lag — API errors, latency — the new pods come on
    top: live pods above replicas + maxSurge. Counting them too keeps the surge bound on pods
    (pycm's deviation, for scale-up only; scale-down budgets keep KCM's Σ spec)."""
    return sum(
        max(replicas_of(rs), int((rs.get("status") or {}).get("replicas") or 0))
        for rs in rss
        if rs is not None
    )


def _status_count(rss: Iterable[Obj | None], field: str) -> int:
    return sum(int((rs.get("status") or {}).get(field) or 0) for rs in rss if rs is not None)


def get_status_replica_count(rss: Iterable[Obj | None]) -> int:
    """Sum of status.replicas (GetActualReplicaCountForReplicaSets)."""
    return _status_count(rss, "replicas")


def get_ready_replica_count(rss: Iterable[Obj | None]) -> int:
    return _status_count(rss, "readyReplicas")


def get_available_replica_count(rss: Iterable[Obj | None]) -> int:
    return _status_count(rss, "availableReplicas")


def get_terminating_replica_count(rss: Iterable[Obj | None]) -> int | None:
    """Sum of status.terminatingReplicas (GetTerminatingReplicaCountForReplicaSets), or None
    when it is unknown: a ReplicaSet its controller has observed (observedGeneration > 0) that
    reports no terminatingReplicas — its controller runs with the gate off. One not yet
    observed and without the field counts as 0."""
    total = 0
    for rs in rss:
        if rs is None:
            continue
        status = rs.get("status") or {}
        terminating = status.get("terminatingReplicas")
        if terminating is None:
            if int(status.get("observedGeneration") or 0) == 0:
                continue
            return None
        total += int(terminating)
    return total


def new_rs_new_replicas(
    deployment: Obj, all_rss: Sequence[Obj | None], new_rs: Obj, current: int | None = None
) -> int:
    """How many replicas the new ReplicaSet should have now (NewRSNewReplicas). ``current``:
    the pods counted against replicas + maxSurge, :func:`pod_count_upper_bound` unless given
    (replacement.py counts terminating pods too)."""
    replicas = replicas_of(deployment)
    if is_rolling_update(deployment):
        surge = max_surge(deployment)
        if current is None:
            current = pod_count_upper_bound(all_rss)
        max_total = replicas + surge
        new_replicas = replicas_of(new_rs)
        if current >= max_total:
            return new_replicas  # cannot scale up
        scale_up = min(max_total - current, replicas - new_replicas)
        return new_replicas + scale_up
    strategy = ((deployment.get("spec") or {}).get("strategy") or {}).get("type")
    if strategy == "Recreate":
        return replicas
    raise ValueError(f"deployment type {strategy} isn't supported")


def annotated_replicas(rs: Obj, annotation: str) -> int | None:
    raw = ((rs.get("metadata") or {}).get("annotations") or {}).get(annotation)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def get_replica_set_fraction(rs: Obj, deployment: Obj) -> int:
    """The change in ``rs``'s size proportional to the deployment's (getReplicaSetFraction)."""
    if replicas_of(deployment) == 0:
        return -replicas_of(rs)
    deployment_replicas = replicas_of(deployment) + max_surge(deployment)
    annotated = annotated_replicas(rs, MAX_REPLICAS_ANNOTATION)
    if not annotated:
        # No usable annotation — missing (an RS adopted mid-rollout), unreadable, or set to 0
        # by a third party: fall back to the deployment's observed size, as KCM does; only
        # when that is 0 too is there nothing to scale in proportion to.
        annotated = int((deployment.get("status") or {}).get("replicas") or 0)
        if annotated == 0:
            return 0
    new_size = replicas_of(rs) * deployment_replicas / annotated
    return round_half_away(new_size) - replicas_of(rs)


def is_saturated(deployment: Obj, rs: Obj | None) -> bool:
    """The new RS has every replica, desired, and available (IsSaturated)."""
    if rs is None:
        return False
    desired = annotated_replicas(rs, DESIRED_REPLICAS_ANNOTATION)
    if desired is None:
        return False
    replicas = replicas_of(deployment)
    available = int((rs.get("status") or {}).get("availableReplicas") or 0)
    return replicas_of(rs) == replicas and desired == replicas and available == replicas


_ABSENT: Any = object()


def _metadata_without_hash(meta: Any) -> Any:
    """A template's metadata (``_ABSENT`` when it has none) as EqualIgnoreHash compares it:
    the pod-template-hash label left out, and an empty labels map or metadata counted as
    absent (apimachinery's semantic equality treats empty and nil maps alike). Builds new
    dicts only where the hash label or an empty map has to go, so a cached template is never
    copied or changed."""
    if meta is _ABSENT:
        return _ABSENT
    if not isinstance(meta, dict):
        return meta
    labels = meta.get("labels")
    if isinstance(labels, dict) and (POD_TEMPLATE_HASH_LABEL in labels or not labels):
        rest = {k: v for k, v in labels.items() if k != POD_TEMPLATE_HASH_LABEL}
        if rest:
            meta = {**meta, "labels": rest}
        else:
            meta = {k: v for k, v in meta.items() if k != "labels"}
    return meta if meta else _ABSENT


def _labels_equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``a`` and ``b`` without the pod-template-hash label are equal (nothing built)."""
    if len(a) - (POD_TEMPLATE_HASH_LABEL in a) != len(b) - (POD_TEMPLATE_HASH_LABEL in b):
        return False
    for key, value in a.items():
        if key != POD_TEMPLATE_HASH_LABEL and b.get(key, _ABSENT) != value:
            return False
    return True


def _metadata_equal_ignore_hash(a: Any, b: Any) -> bool:
    """The two templates' metadata equal as :func:`_metadata_without_hash` compares them.

    The common shape — both metadata maps with a labels map — is compared where it lies, with
    nothing built: the other fields by equality, the labels with the hash left out (a labels
    map that is empty without the hash counts as absent on both sides alike, so comparing the
    remainders decides). Any other shape takes :func:`_metadata_without_hash`."""
    if isinstance(a, dict) and isinstance(b, dict):
        labels_a, labels_b = a.get("labels"), b.get("labels")
        if isinstance(labels_a, dict) and isinstance(labels_b, dict):
            if len(a) != len(b):
                return False
            for key, value in a.items():
                if key != "labels" and b.get(key, _ABSENT) != value:
                    return False
            return _labels_equal_ignore_hash(labels_a, labels_b)
    return bool(_metadata_without_hash(a) == _metadata_without_hash(b))


def equal_ignore_hash(template1: Obj | None, template2: Obj | None) -> bool:
    """Pod templates equal apart from the pod-template-hash label (EqualIgnoreHash).

    Compares in place — no copies: every field but metadata by plain (deep) equality,
    metadata with the hash label left out."""
    a: Obj = template1 or {}
    b: Obj = template2 or {}
    if a is b:
        return True
    if len(a) - ("metadata" in a) != len(b) - ("metadata" in b):
        return False
    for key, value in a.items():
        if key != "metadata" and b.get(key, _ABSENT) != value:
            return False
    # Same count of other fields and each of a's in b: the same field names.
    return _metadata_equal_ignore_hash(a.get("metadata", _ABSENT), b.get("metadata", _ABSENT))


_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def compute_hash(template: Obj, collision_count: int | None) -> str:
    """The pod-template-hash: FNV-1a (32-bit) of the template's canonical JSON and the
    collision count, spelled in apimachinery's "safe" alphabet (no vowels, no 0/1/3).

    KCM hashes Go's object dump, which Python cannot reproduce byte for byte, so the values
    differ from a real cluster's; what matters — stable for one template, different after a
    collision bump — holds.
    """
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count:
        data += int(collision_count).to_bytes(4, "little", signed=False)
    value = 0x811C9DC5
    for byte in data:
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in str(value))


def creation_key(rs: Obj) -> tuple[float, str]:
    """(creation time, name): the ReplicaSetsByCreationTimestamp order."""
    meta = rs.get("metadata") or {}
    stamp = meta.get("creationTimestamp")
    try:
        when = parse_time(stamp).timestamp() if stamp else 0.0
    except ValueError:
        when = 0.0
    return when, str(meta.get("name", ""))


def find_new_replica_set(deployment: Obj, rss: Sequence[R]) -> R | None:
    """The oldest ReplicaSet whose template equals the deployment's (FindNewReplicaSet).

    KCM sorts by creation time and takes the first match; the earliest match by the same key
    is the same RS (``min`` keeps the first of equals, as a stable sort does) without parsing
    the timestamps of RSs that do not match."""
    template = (deployment.get("spec") or {}).get("template")
    matching = [
        rs for rs in rss if equal_ignore_hash((rs.get("spec") or {}).get("template"), template)
    ]
    if len(matching) <= 1:
        return matching[0] if matching else None
    return min(matching, key=creation_key)


def find_old_replica_sets(
    deployment: Obj, rss: Sequence[R], new_rs: Obj | None = None
) -> tuple[list[R], list[R]]:
    """(old RSs with pods, all old RSs) — every RS but the new one (FindOldReplicaSets)."""
    new = new_rs if new_rs is not None else find_new_replica_set(deployment, rss)
    new_uid = ((new or {}).get("metadata") or {}).get("uid")
    all_old = [rs for rs in rss if (rs.get("metadata") or {}).get("uid") != new_uid or new is None]
    requiring = [rs for rs in all_old if replicas_of(rs) != 0]
    return requiring, all_old


def filter_active_replica_sets(rss: Iterable[R | None]) -> list[R]:
    return [rs for rs in rss if rs is not None and replicas_of(rs) > 0]


def revision(obj: Obj) -> int:
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION_ANNOTATION)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


def max_revision(rss: Iterable[Obj]) -> int:
    return max((revision(rs) for rs in rss), default=0)


# -- conditions and progress -----------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _second_text(second: int) -> str:
    return dt.datetime.fromtimestamp(second, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _time_text(now: float) -> str:
    # Conditions carry whole seconds and every sync builds one: format each second once.
    return _second_text(math.floor(now))


def new_condition(type_: str, status: str, reason: str, message: str, now: float) -> dict[str, Any]:
    stamp = _time_text(now)
    return {
        "type": type_,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def get_condition(status: Obj, type_: str) -> dict[str, Any] | None:
    for condition in status.get("conditions") or ():
        if condition.get("type") == type_:
            return condition  # type: ignore[no-any-return]
    return None


def set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    """SetDeploymentCondition: no change for the same status and reason; the transition
    time is kept while the status stays the same."""
    current = get_condition(status, condition["type"])
    if (
        current is not None
        and current.get("status") == condition["status"]
        and current.get("reason") == condition["reason"]
    ):
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    others = [c for c in status.get("conditions") or () if c.get("type") != condition["type"]]
    status["conditions"] = [*others, condition]


def remove_condition(status: dict[str, Any], type_: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != type_]


def has_progress_deadline(deployment: Obj) -> bool:
    seconds = (deployment.get("spec") or {}).get("progressDeadlineSeconds")
    return seconds is not None and int(seconds) != MAX_INT32


def deployment_complete(deployment: Obj, new_status: Obj) -> bool:
    """Every replica updated and available, and the newest generation observed."""
    replicas = replicas_of(deployment)
    generation = int((deployment.get("metadata") or {}).get("generation") or 0)
    return (
        int(new_status.get("updatedReplicas") or 0) == replicas
        and int(new_status.get("replicas") or 0) == replicas
        and int(new_status.get("availableReplicas") or 0) == replicas
        and int(new_status.get("observedGeneration") or 0) >= generation
    )


def deployment_progressing(deployment: Obj, new_status: Obj) -> bool:
    """More updated, fewer old, more ready or more available than the status says now."""
    old = deployment.get("status") or {}

    def n(status: Obj, field: str) -> int:
        return int(status.get(field) or 0)

    old_old = n(old, "replicas") - n(old, "updatedReplicas")
    new_old = n(new_status, "replicas") - n(new_status, "updatedReplicas")
    return (
        n(new_status, "updatedReplicas") > n(old, "updatedReplicas")
        or new_old < old_old
        or n(new_status, "readyReplicas") > n(old, "readyReplicas")
        or n(new_status, "availableReplicas") > n(old, "availableReplicas")
    )


def deployment_timed_out(deployment: Obj, new_status: Obj, now: float) -> bool:
    """The Progressing condition was last updated longer than the deadline ago."""
    if not has_progress_deadline(deployment):
        return False
    condition = get_condition(new_status, PROGRESSING)
    if condition is None:
        return False
    reason = condition.get("reason")
    if reason == NEW_RS_AVAILABLE:
        return False
    if reason == TIMED_OUT:
        return True
    stamp = condition.get("lastUpdateTime")
    if not stamp:
        return False
    deadline = int((deployment.get("spec") or {}).get("progressDeadlineSeconds") or 0)
    return parse_time(stamp).timestamp() + deadline < now
