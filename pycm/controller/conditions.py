"""Status conditions with apimachinery's ``meta.SetStatusCondition`` semantics, and their write
through the status subresource.

:func:`set_status_condition` is pure: a condition of a new type is appended (its
``lastTransitionTime`` now unless given); an existing one takes the new status, reason, message
and ``observedGeneration``, and its ``lastTransitionTime`` changes only when its status does —
so "since when has it been Ready=False" stays true across reconciles that repeat the same state.

:func:`set_condition` applies that to an object's ``status.conditions`` with
``observedGeneration`` = the object's ``metadata.generation`` and writes the result as a merge
patch of the status subresource carrying the object's resourceVersion (a 409 when it changed
since it was read). When nothing changed it writes nothing. Each write is traced
(``condition.set``); the message stays out of the trace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pycm.api.meta import Obj, format_time, time_from_unix_ns
from pycm.kube.resources import Resource
from pycm.trace.bus import Bus
from pycm.trace.kinds import ConditionSet
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = [
    "Condition",
    "ConditionClient",
    "find_status_condition",
    "is_status_condition_true",
    "remove_status_condition",
    "set_condition",
    "set_status_condition",
]

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


@dataclass(frozen=True, slots=True)
class Condition:
    """A metav1.Condition to set (``last_transition_time`` empty: now, when it transitions)."""

    type: str
    status: str
    reason: str
    message: str = ""
    observed_generation: int = 0
    last_transition_time: str = ""

    def __post_init__(self) -> None:
        if self.status not in (TRUE, FALSE, UNKNOWN):
            raise ValueError(
                f"condition status must be True, False or Unknown, not {self.status!r}"
            )
        if not self.type or not self.reason:
            raise ValueError("a condition needs a type and a reason")


def find_status_condition(
    conditions: Sequence[Mapping[str, Any]] | None, type_: str
) -> Mapping[str, Any] | None:
    for condition in conditions or ():
        if condition.get("type") == type_:
            return condition
    return None


def is_status_condition_true(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> bool:
    found = find_status_condition(conditions, type_)
    return found is not None and found.get("status") == TRUE


def remove_status_condition(
    conditions: Sequence[Mapping[str, Any]] | None, type_: str
) -> tuple[list[dict[str, Any]], bool]:
    """(the conditions without ``type_``, whether one was removed)."""
    kept = [dict(c) for c in conditions or () if c.get("type") != type_]
    return kept, len(kept) != len(conditions or ())


def set_status_condition(
    conditions: Sequence[Mapping[str, Any]] | None, new: Condition, now: str
) -> tuple[list[dict[str, Any]], bool]:
    """(the conditions with ``new`` set, whether anything changed); ``now`` (RFC 3339) is the
    transition time of a condition that is added or changes status, unless ``new`` has one."""
    out = [dict(c) for c in conditions or ()]
    when = new.last_transition_time or now
    for condition in out:
        if condition.get("type") != new.type:
            continue
        before = dict(condition)
        if condition.get("status") != new.status:
            condition["status"] = new.status
            condition["lastTransitionTime"] = when
        condition["reason"] = new.reason
        condition["message"] = new.message
        condition["observedGeneration"] = new.observed_generation
        return out, condition != before
    out.append(
        {
            "type": new.type,
            "status": new.status,
            "observedGeneration": new.observed_generation,
            "lastTransitionTime": when,
            "reason": new.reason,
            "message": new.message,
        }
    )
    return out, True


class ConditionClient(Protocol):
    """The subset of :class:`~pycm.kube.client.Client` :func:`set_condition` uses."""

    @property
    def bus(self) -> Bus: ...

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Mapping[str, Any],
        *,
        namespace: str | None = "",
        subresource: str = "",
    ) -> Obj: ...


async def set_condition(
    client: ConditionClient,
    res: Resource,
    obj: Mapping[str, Any],
    type_: str,
    status: str,
    reason: str,
    message: str = "",
    *,
    clock: Clock = REAL_CLOCK,
) -> Obj:
    """Set the condition ``type_`` on ``obj``'s status (observedGeneration: its generation)
    and write it through the status subresource; ``obj`` itself when nothing changed."""
    meta = obj.get("metadata") or {}
    generation = int(meta.get("generation") or 0)
    condition = Condition(type_, status, reason, message, generation)
    status_ = obj.get("status") or {}
    current = status_.get("conditions") if isinstance(status_, Mapping) else None
    before = find_status_condition(current, type_)
    now = format_time(time_from_unix_ns(clock.wall_ns()))
    conditions, changed = set_status_condition(current, condition, now)
    if not changed:
        return dict(obj)
    patch = {
        "metadata": {"resourceVersion": str(meta.get("resourceVersion") or "")},
        "status": {"conditions": conditions},
    }
    written = await client.patch(
        res,
        str(meta.get("name", "")),
        patch,
        namespace=str(meta.get("namespace") or ""),
        subresource="status",
    )
    client.bus.point(
        ConditionSet(
            resource=res.group_resource,
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            type=type_,
            status=status,
            reason=reason,
            observed_generation=generation,
            transitioned=before is None or before.get("status") != status,
        )
    )
    return written
