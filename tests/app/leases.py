"""Objects the in-process manager tests create: a leader Lease another replica holds, a
ReplicaSet of two pods."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def now_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_held_by_another() -> dict[str, Any]:
    """The leader Lease ``kube-system/pycm``, held by "another" for the whole test."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "pycm", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "another",
            "leaseDurationSeconds": 3600,  # valid for the whole test: a standby stays one
            "acquireTime": now_micro(),
            "renewTime": now_micro(),
            "leaseTransitions": 0,
        },
    }
