"""Which names a CRD gets, and its ``NamesAccepted`` / ``Established`` conditions.

As apiextensions-apiserver's naming controller: a CRD's names (plural, singular, short names,
kind, list kind) are checked against those already accepted for the other CRDs of the same
group. The first conflict found, in that order, makes ``NamesAccepted`` False with kube's
reason (``PluralConflict``, ``SingularConflict``, ``ShortNamesConflict``, ``KindConflict``,
``ListKindConflict``) and message (``"websites" is already in use``); ``Established`` is then
False (``NotAccepted``, ``not all names are accepted``) and the resource is not served. With no
conflict: ``NamesAccepted`` True (``NoConflicts``, ``no conflicts found``), the names become
``status.acceptedNames``, and ``Established`` True (``InitialNamesAccepted``, ``the initial names
have been accepted``).

A condition's ``lastTransitionTime`` changes only when its status does. kube runs these as
controllers, a moment after the write; the emulator computes them on the write itself, so a
CRD reads Established in the response that created it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["crd_status", "is_established", "set_condition"]

Obj = dict[str, Any]


def _names(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = crd.get("spec") or {}
    return spec.get("names") or {}


def _accepted(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    return (crd.get("status") or {}).get("acceptedNames") or {}


def _conflict(
    names: Mapping[str, Any], others: Sequence[Mapping[str, Any]]
) -> tuple[str, str] | None:
    """(reason, message) of the first name already accepted by another CRD, or None."""

    def in_use(value: Any, fields: Iterable[str]) -> bool:
        for other in others:
            for f in fields:
                held = other.get(f)
                if held == value or (isinstance(held, list) and value in held):
                    return True
        return False

    plural, singular = names.get("plural"), names.get("singular")
    if plural and in_use(plural, ("plural", "singular", "shortNames")):
        return "PluralConflict", f'"{plural}" is already in use'
    if singular and in_use(singular, ("plural", "singular", "shortNames")):
        return "SingularConflict", f'"{singular}" is already in use'
    for short in names.get("shortNames") or []:
        if in_use(short, ("plural", "singular", "shortNames")):
            return "ShortNamesConflict", f'"{short}" is already in use'
    kind, list_kind = names.get("kind"), names.get("listKind")
    if kind and in_use(kind, ("kind", "listKind")):
        return "KindConflict", f'"{kind}" is already in use'
    if list_kind and in_use(list_kind, ("kind", "listKind")):
        return "ListKindConflict", f'"{list_kind}" is already in use'
    return None


def set_condition(
    conditions: list[Obj], type_: str, status: str, reason: str, message: str, now: str
) -> None:
    for condition in conditions:
        if condition.get("type") == type_:
            if condition.get("status") != status:
                condition["lastTransitionTime"] = now
            condition.update({"status": status, "reason": reason, "message": message})
            return
    conditions.append(
        {
            "type": type_,
            "status": status,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }
    )


def crd_status(
    crd: Mapping[str, Any],
    old_status: Mapping[str, Any] | None,
    others: Sequence[Mapping[str, Any]],
    now: str,
) -> Obj:
    """The status a (defaulted, valid) CRD gets on a write: accepted names, the two
    conditions, stored versions. ``others``: the other CRDs of the same group, as stored."""
    status: Obj = {k: v for k, v in (old_status or {}).items()}
    conditions: list[Obj] = [
        dict(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)
    ]
    names = _names(crd)
    conflict = _conflict(names, [_accepted(o) for o in others])
    if conflict is None:
        status["acceptedNames"] = {k: v for k, v in names.items()}
        set_condition(conditions, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now)
        set_condition(
            conditions,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            now,
        )
    else:
        # kube's AcceptedNames always carries plural and kind (not omitempty).
        status.setdefault("acceptedNames", {"plural": "", "kind": ""})
        set_condition(conditions, "NamesAccepted", "False", conflict[0], conflict[1], now)
        if not is_established({"status": {"conditions": conditions}}):
            set_condition(
                conditions, "Established", "False", "NotAccepted", "not all names are accepted", now
            )
    status["conditions"] = conditions
    stored = list(status.get("storedVersions") or [])
    for version in (crd.get("spec") or {}).get("versions") or []:
        storage = isinstance(version, Mapping) and version.get("storage") is True
        if storage and version.get("name") not in stored:
            stored.append(version.get("name"))
    status["storedVersions"] = stored
    return status


def is_established(crd: Mapping[str, Any]) -> bool:
    for condition in (crd.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Established":
            return condition.get("status") == "True"
    return False
