"""Pod control: pods made from a controller's template, and deletions, each with its Event.

As KCM's RealPodControl: a pod gets the template's labels, annotations, finalizers and spec, a
generateName of ``<controller>-``, and the controller reference; success and failure are
recorded as ``SuccessfulCreate`` / ``FailedCreate`` / ``SuccessfulDelete`` / ``FailedDelete``
Events on the controller.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Protocol

from pycm.api.meta import name
from pycm.kube.errors import is_not_found

__all__ = ["PodClient", "PodControl", "pod_from_template"]

Obj = dict[str, Any]


class PodClient(Protocol):
    async def create_pod(self, namespace: str, body: Obj) -> Obj: ...

    async def delete_pod(self, namespace: str, name: str) -> None: ...


class Recorder(Protocol):
    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None: ...


def pod_from_template(
    template: Mapping[str, Any], controller: Mapping[str, Any], controller_ref: Mapping[str, Any]
) -> Obj:
    meta = template.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    if not labels:
        raise ValueError("unable to create pods, no labels")
    pod_meta: dict[str, Any] = {
        "generateName": f"{name(controller)}-",
        "labels": labels,
        "ownerReferences": [dict(controller_ref)],
    }
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    if meta.get("finalizers"):
        pod_meta["finalizers"] = list(meta["finalizers"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


class PodControl:
    def __init__(self, client: PodClient, recorder: Recorder) -> None:
        self._client = client
        self._recorder = recorder

    async def create_pods(
        self,
        namespace: str,
        template: Mapping[str, Any],
        controller: Obj,
        controller_ref: Mapping[str, Any],
    ) -> Obj:
        pod = pod_from_template(template, controller, controller_ref)
        try:
            created = await self._client.create_pod(namespace, pod)
        except Exception as exc:
            self._recorder.event(controller, "Warning", "FailedCreate", f"Error creating: {exc}")
            raise
        self._recorder.event(
            controller, "Normal", "SuccessfulCreate", f"Created pod: {name(created)}"
        )
        return created

    async def delete_pod(self, namespace: str, pod_name: str, controller: Obj) -> None:
        try:
            await self._client.delete_pod(namespace, pod_name)
        except Exception as exc:
            if is_not_found(exc):
                raise  # already gone: the caller lowers its expectations, no Event
            self._recorder.event(controller, "Warning", "FailedDelete", f"Error deleting: {exc}")
            raise
        self._recorder.event(controller, "Normal", "SuccessfulDelete", f"Deleted pod: {pod_name}")
