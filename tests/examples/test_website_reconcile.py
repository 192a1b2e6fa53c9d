"""The Website operator's reconcile without a cluster (docs/controllers.md, "Unit tests"): a
context whose informers never start, a preloaded cache, a fake client that records its calls
and a fake REST mapper. Its tests against the emulator are in the example's own suite."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.controller import ControllerContext, ControllerDescriptor
from pycm.kube.errors import NotFound
from pycm.kube.resources import Resource
from pycm.trace.bus import Bus
from pycm.trace.kinds import ItemDropped, ReconcileResult
from pycm.util.clock import FakeClock

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "website-operator"
WEBSITES = Resource("example.com", "v1", "websites", "Website", True, frozenset({"status"}))
SERVICES = Resource("", "v1", "services", "Service", True, frozenset({"status"}))


class NoClient:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected informer API call: {name}")


class FakeMapper:
    async def resource_for(self, group: str, version: str, kind: str) -> Resource:
        return {"Website": WEBSITES, "Service": SERVICES}[kind]


class FakeClient:
    """Records patches and applies; a patch is merged into the Website it holds."""

    def __init__(self, bus: Bus, site: Any) -> None:
        self.bus = bus
        self.site = copy.deepcopy(site)
        self.calls: list[tuple[str, str, str, Any]] = []
        self.missing = False  # patches answer 404 (the object is gone)

    async def patch(
        self, res: Resource, name: str, patch: Any, *, namespace: str = "", subresource: str = ""
    ) -> Any:
        what = res.resource + (f"/{subresource}" if subresource else "")
        self.calls.append(("patch", what, name, patch))
        if self.missing:
            raise NotFound('websites.example.com "shop" not found', code=404)
        self.site = _merge(self.site, patch)
        return copy.deepcopy(self.site)

    async def apply(self, res: Resource, obj: Any, *, field_manager: str, force: bool) -> Any:
        self.calls.append(("apply", res.resource, obj["metadata"]["name"], obj))
        return {**obj, "status": {"availableReplicas": 0}}


def _merge(obj: Any, patch: Any) -> Any:
    """A JSON merge patch (RFC 7386), as the server applies one."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(obj) if isinstance(obj, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((obj["kind"], type_, reason, message))


@pytest.fixture
def descriptor(monkeypatch: pytest.MonkeyPatch) -> ControllerDescriptor:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from pycm_website.controller import descriptor as website

    return website


async def _rig(
    descriptor: ControllerDescriptor, site: Any
) -> tuple[ControllerContext, FakeClient, FakeRecorder]:
    bus, clock = Bus(), FakeClock()
    client, recorder = FakeClient(bus, site), FakeRecorder()
    ctx = ControllerContext(
        config=None,
        bus=bus,
        clock=clock,
        client_for=lambda name: client,  # type: ignore[arg-type,return-value]
        recorder_for=lambda name: recorder,  # type: ignore[arg-type,return-value]
        informer_factory=SharedInformerFactory(NoClient(), bus=bus, clock=clock),
        metadata_informer_factory=MetadataInformerFactory(NoClient(), bus=bus, clock=clock),
        rest_mapper=FakeMapper(),  # type: ignore[arg-type]
    )
    assert await descriptor.init(ctx) is not None
    ctx.informer_factory.informer_for(WEBSITES).indexer.add(site)
    return ctx, client, recorder


def _site(**spec: Any) -> Any:
    meta = {
        "name": "shop",
        "namespace": "web",
        "uid": "u1",
        "generation": 3,
        "resourceVersion": "7",
    }
    return {"metadata": meta, "spec": spec}


@pytest.mark.asyncio
async def test_new_website_gets_finalizer_owned_children_and_ready_false(
    descriptor: ControllerDescriptor,
) -> None:
    ctx, client, _ = await _rig(descriptor, _site(replicas=2, image="nginx:1.25"))
    assert await ctx.queues["website"].process("web/shop") is ReconcileResult.SUCCESS
    verbs = [(verb, what) for verb, what, _, _ in client.calls]
    assert verbs == [
        ("patch", "websites"),  # the finalizer
        ("apply", "deployments"),
        ("apply", "services"),
        ("patch", "websites/status"),  # Ready
    ]
    finalizer = client.calls[0][3]["metadata"]
    assert (finalizer["finalizers"], finalizer["resourceVersion"]) == (
        ["example.com/website-cleanup"],
        "7",
    )
    deployment, service = client.calls[1][3], client.calls[2][3]
    for child in (deployment, service):
        assert child["metadata"]["namespace"] == "web"
        (ref,) = child["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
            "Website",
            "shop",
            "u1",
            True,
        )
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    (ready,) = client.calls[3][3]["status"]["conditions"]
    assert (ready["type"], ready["status"], ready["reason"], ready["message"]) == (
        "Ready",
        "False",
        "Progressing",
        "0 of 2 replicas available",
    )
    assert ready["observedGeneration"] == 3


@pytest.mark.asyncio
async def test_website_without_image_is_a_terminal_error_with_a_warning(
    descriptor: ControllerDescriptor,
) -> None:
    ctx, client, recorder = await _rig(descriptor, _site(replicas=1))
    assert await ctx.queues["website"].process("web/shop") is ReconcileResult.ERROR
    (dropped,) = [e for e in ctx.bus.recent() if isinstance(e, ItemDropped)]
    assert dropped.reason == "terminal error"
    assert "apply" not in {verb for verb, *_ in client.calls}
    (ready,) = client.calls[-1][3]["status"]["conditions"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "NoImage",
        "spec.image is empty: set it to the image to serve",
    )
    assert recorder.events == [
        (
            "Website",
            "Warning",
            "ReconcileFailed",
            "spec.image is empty: set it to the image to serve",
        )
    ]


@pytest.mark.asyncio
async def test_deleted_website_runs_finalizer_and_a_gone_object_is_no_error(
    descriptor: ControllerDescriptor,
) -> None:
    site = _site(replicas=1, image="nginx:1.25")
    site["metadata"] |= {
        "deletionTimestamp": "2026-01-01T00:00:00Z",
        "finalizers": ["example.com/website-cleanup"],
    }
    ctx, client, recorder = await _rig(descriptor, site)
    client.missing = True  # the finalizer was removed already: the stale cache's reconcile
    assert await ctx.queues["website"].process("web/shop") is ReconcileResult.SUCCESS
    assert [(verb, what) for verb, what, _, _ in client.calls] == [("patch", "websites")]
    assert client.calls[0][3]["metadata"]["finalizers"] == []
    assert recorder.events == [
        ("Website", "Normal", "CleanedUp", "the Deployment and Service go with it")
    ]
