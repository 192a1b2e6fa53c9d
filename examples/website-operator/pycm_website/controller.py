"""``website``: a Website (example.com/v1) becomes a Deployment and a Service it owns.

Server-side apply writes both children (owner references set, so the garbage collector
removes them with the Website); the Ready condition is written through the status
subresource; a finalizer records the clean-up before the Website goes. A Website without an
image cannot be fixed by retrying: a TerminalError (a Warning event on it) until it is edited.
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
    TerminalError,
    add_finalizer,
    ignore_not_found,
    is_being_deleted,
    remove_finalizer,
    set_condition,
    set_controller_reference,
)
from pycm.kube.resources import DEPLOYMENTS

FINALIZER = "example.com/website-cleanup"
MANAGER = "website-operator"  # the field manager of its server-side applies


async def init(ctx: ControllerContext) -> Runnable:
    websites = await ctx.resource_for("example.com", "v1", "Website")
    services = await ctx.resource_for("", "v1", "Service")
    client = ctx.client_for(MANAGER)
    recorder = ctx.recorder_for(MANAGER)
    builder = ControllerBuilder(ctx, "website").for_(websites).owns(DEPLOYMENTS).owns(services)
    cache = builder.lister(websites)

    async def reconcile(request: Request) -> Result:
        site = cache.get(request.namespace, request.name)
        if site is None:
            return Result(action="gone")
        if is_being_deleted(site):
            about = {**site, "apiVersion": websites.api_version, "kind": websites.kind}
            recorder.event(about, "Normal", "CleanedUp", "the Deployment and Service go with it")
            await ignore_not_found(remove_finalizer(client, websites, site, FINALIZER))
            return Result(action="finalized")
        site = await add_finalizer(client, websites, site, FINALIZER)
        spec = site.get("spec") or {}
        if not spec.get("image"):
            message = "spec.image is empty: set it to the image to serve"
            await set_condition(client, websites, site, "Ready", "False", "NoImage", message)
            raise TerminalError(message)
        name, replicas = request.name, int(spec.get("replicas", 1))
        labels = {"app.kubernetes.io/instance": name}

        def owned(obj: Any) -> Any:
            obj["metadata"]["namespace"] = request.namespace
            return set_controller_reference(site, obj, websites, bus=ctx.bus)

        deployment = _deployment(name, labels, replicas, spec["image"])
        deployed = await client.apply(
            DEPLOYMENTS, owned(deployment), field_manager=MANAGER, force=True
        )
        await client.apply(
            services, owned(_service(name, labels)), field_manager=MANAGER, force=True
        )
        available = (deployed.get("status") or {}).get("availableReplicas", 0)
        ready = available >= replicas
        reason = "Available" if ready else "Progressing"
        message = f"{available} of {replicas} replicas available"
        await set_condition(client, websites, site, "Ready", str(ready), reason, message)
        return Result(action="applied", uid=site["metadata"]["uid"])

    return builder.complete(reconcile)


def _deployment(name: str, labels: dict[str, str], replicas: int, image: str) -> Any:
    container = {"name": "web", "image": image, "ports": [{"containerPort": 80}]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def _service(name: str, labels: dict[str, str]) -> Any:
    ports = [{"name": "http", "port": 80, "targetPort": 80}]
    meta = {"name": name, "labels": labels}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"selector": labels, "ports": ports},
    }


descriptor = ControllerDescriptor("website", init, aliases=("website-operator",))
