"""meta/v1: object metadata, owner references, label selectors."""

from __future__ import annotations

from pycm.sim.schemas.fields import MAP, OPAQUE, ListOf, Struct, leaves

__all__ = [
    "LABEL_SELECTOR",
    "OBJECT_META",
    "OWNER_REFERENCE",
]

OWNER_REFERENCE: Struct = leaves(
    "apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"
)
OBJECT_META: Struct = {
    **leaves(
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "finalizers",
    ),
    "labels": MAP,
    "annotations": MAP,
    "ownerReferences": ListOf(OWNER_REFERENCE),
    "managedFields": OPAQUE,
}
LABEL_SELECTOR: Struct = {
    "matchLabels": MAP,
    "matchExpressions": ListOf(leaves("key", "operator", "values")),
}
