"""A small controller for the pycm.testing tests: it stamps ConfigMaps labelled
``stamp=yes`` with ``data.stamped = "yes"`` (registered in code: ``descriptors=[STAMP]``)."""

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


def _labelled(obj: Any) -> bool:
    return bool(((obj.get("metadata") or {}).get("labels") or {}).get("stamp") == "yes")


async def init(ctx: ControllerContext) -> Runnable:
    client = ctx.client_for("stamp")
    builder = ControllerBuilder(ctx, "stamp").for_(CONFIGMAPS, predicate=_labelled)
    configmaps = builder.lister(CONFIGMAPS)

    async def reconcile(request: Request) -> Result:
        cm = configmaps.get(request.namespace, request.name)
        if cm is None or (cm.get("data") or {}).get("stamped") == "yes":
            return Result(action="noop")
        patch = {"data": {"stamped": "yes"}}
        await client.patch(CONFIGMAPS, request.name, patch, namespace=request.namespace)
        return Result(action="stamped")

    return builder.complete(reconcile)


STAMP = ControllerDescriptor("stamp", init, enabled_by_default=False)

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: hello
  labels: {stamp: "yes"}
data:
  message: hi
"""
