"""The workload the tests create: a Deployment or ReplicaSet of nginx pods selected by
``app=<name>`` — one manifest, not a copy in each module that needs one."""

from __future__ import annotations

from typing import Any


def workload(
    kind: str, name: str, replicas: int = 1, namespace: str | None = "default"
) -> dict[str, Any]:
    """A ``kind`` (``Deployment`` or ``ReplicaSet``, apps/v1) named ``name`` with ``replicas``
    pods labelled ``app=<name>``; ``namespace=None`` leaves it to the request's path."""
    labels = {"app": name}
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
