"""Owner references: building a controller reference and asking who controls an object."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pycm.api.meta import controller_ref, name, uid

__all__ = ["is_controlled_by", "new_controller_ref"]


def new_controller_ref(owner: Mapping[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    """metav1.NewControllerRef: an owner reference to ``owner`` with ``controller`` and
    ``blockOwnerDeletion`` set (what a controller puts on the objects it creates)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name(owner),
        "uid": uid(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """metav1.IsControlledBy: ``obj``'s controller reference points at ``owner``'s UID."""
    ref = controller_ref(obj)
    return ref is not None and bool(uid(owner)) and ref.get("uid") == uid(owner)
