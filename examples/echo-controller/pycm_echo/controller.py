"""The ``echo`` controller: a ConfigMap labelled ``pycm.dev/echo=true`` gets the annotation
``pycm.dev/echo`` set to its ``data.message``; the annotation is removed when the key is gone.
Every other ConfigMap is ignored. Off by default: ``pycm run --controllers=*,echo``.
"""

from __future__ import annotations

from typing import Any

from pycm.controller import (
    ControllerBuilder,
    ControllerContext,
    ControllerDescriptor,
    Request,
    Result,
    Runnable,
)
from pycm.kube.resources import CONFIGMAPS

NAME = "echo"
LABEL = "pycm.dev/echo"
ANNOTATION = "pycm.dev/echo"


def labelled(configmap: dict[str, Any]) -> bool:
    """The predicate: only ConfigMaps that ask to be echoed."""
    labels = (configmap.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(LABEL) == "true")


async def init(ctx: ControllerContext) -> Runnable:
    # A client and an event recorder of the controller's own (user agent, event source).
    client = ctx.client_for("echo-controller")
    recorder = ctx.recorder_for("echo-controller")
    builder = ControllerBuilder(ctx, NAME).for_(CONFIGMAPS, predicate=labelled)
    configmaps = builder.lister(CONFIGMAPS)

    async def reconcile(request: Request) -> Result:
        configmap = configmaps.get(request.namespace, request.name)
        if configmap is None or not labelled(configmap):
            return Result(action="ignored")  # deleted, or the label was taken off
        message = (configmap.get("data") or {}).get("message")
        annotations = (configmap.get("metadata") or {}).get("annotations") or {}
        if annotations.get(ANNOTATION) == message:
            return Result(action="noop")
        # A merge patch: null removes the annotation. A conflict or an error is retried
        # with backoff by the worker loop; the next reconcile reads the cache afresh.
        patch = {"metadata": {"annotations": {ANNOTATION: message}}}
        await client.patch(CONFIGMAPS, request.name, patch, namespace=request.namespace)
        what = "set from data.message" if message is not None else "removed"
        recorder.event(
            {**configmap, "apiVersion": "v1", "kind": "ConfigMap"},
            "Normal",
            "Echoed",
            f"annotation {ANNOTATION} {what}",
        )
        return Result(action="echoed" if message is not None else "cleared")

    return builder.complete(reconcile)


descriptor = ControllerDescriptor(
    NAME, init, aliases=("echo-controller",), enabled_by_default=False, requires=("configmaps",)
)
