"""Unknown fields, dropped as kube-apiserver's typed decoding drops them.

kube decodes a body into the Go type of its resource: a field the type does not declare is
lost ("pruned"). How the client hears of it is the ``fieldValidation`` query parameter (the
server default since 1.27 is ``Warn``):

- ``Warn`` (or unset): dropped, and each named in a ``Warning: 299 - "unknown field \\"x\\""``
  response header;
- ``Ignore``: dropped silently;
- ``Strict``: 400 BadRequest ``strict decoding error: unknown field "x"`` (every one listed).

The emulator prunes where it knows the whole schema: the top level of each kind it serves
(``apiVersion``, ``kind``, ``metadata`` and the kind's own fields), ObjectMeta, and each owner
reference. Deeper levels (a pod spec's containers, a workload's template) are not declared
completely here and pass as they are; a field a client invents there is kept, not pruned.
"""

from __future__ import annotations

from typing import Any

from pycm.sim import errors

__all__ = ["FIELD_VALIDATION", "prune_unknown_fields", "warning_headers"]

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")

_OBJECT_META = frozenset(
    {
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
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_OWNER_REFERENCE = frozenset(
    {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}
)
_SPEC_STATUS = frozenset({"spec", "status"})
# Each kind's top-level fields besides apiVersion, kind and metadata (the Go types' json tags).
_TOP_LEVEL: dict[str, frozenset[str]] = {
    "Namespace": _SPEC_STATUS,
    "Node": _SPEC_STATUS,
    "Pod": _SPEC_STATUS,
    "Deployment": _SPEC_STATUS,
    "ReplicaSet": _SPEC_STATUS,
    "Lease": frozenset({"spec"}),
    "ConfigMap": frozenset({"data", "binaryData", "immutable"}),
    "ServiceAccount": frozenset({"secrets", "imagePullSecrets", "automountServiceAccountToken"}),
    "Event": frozenset(
        {
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "series",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
        }
    ),
}
_ENVELOPE = frozenset({"apiVersion", "kind", "metadata"})


def _drop(obj: dict[str, Any], known: frozenset[str], prefix: str, found: list[str]) -> None:
    for key in [k for k in obj if k not in known]:
        del obj[key]
        found.append(prefix + key)


def prune_unknown_fields(kind: str, body: dict[str, Any], validation: str | None) -> list[str]:
    """Drop the fields of ``body`` (a freshly decoded request body, changed in place) that
    ``kind`` does not declare, as the ``fieldValidation`` mode says; the fields dropped, by
    path. 400 for ``Strict`` with any, or for a mode kube does not know."""
    mode = validation or "Warn"
    if mode not in FIELD_VALIDATION:
        raise errors.bad_request(
            f'fieldValidation: Unsupported value: "{mode}": supported values: '
            + ", ".join(f'"{m}"' for m in FIELD_VALIDATION)
        )
    own = _TOP_LEVEL.get(kind)
    if own is None:
        return []
    found: list[str] = []
    _drop(body, _ENVELOPE | own, "", found)
    meta = body.get("metadata")
    if isinstance(meta, dict):
        _drop(meta, _OBJECT_META, "metadata.", found)
        refs = meta.get("ownerReferences")
        if isinstance(refs, list):
            for i, ref in enumerate(refs):
                if isinstance(ref, dict):
                    _drop(ref, _OWNER_REFERENCE, f"metadata.ownerReferences[{i}].", found)
    if found and mode == "Strict":
        listed = ", ".join(f'unknown field "{path}"' for path in found)
        raise errors.bad_request(f"strict decoding error: {listed}")
    return found if mode == "Warn" else []


def warning_headers(fields: list[str]) -> list[tuple[str, str]]:
    """The ``Warning`` headers kube sends for pruned fields (RFC 7234 code 299)."""
    return [("Warning", f'299 - "unknown field \\"{path}\\""') for path in fields]
