"""The echo example's reconcile, unit-tested the way docs/controllers.md shows: a context whose
informers never start, a preloaded cache, fakes for the client and the recorder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.controller import ControllerContext, ControllerDescriptor
from pycm.kube.resources import CONFIGMAPS
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "echo-controller"


class NoClient:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected informer API call: {name}")


class FakeClient:
    """Records patches; any other call fails the test."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, str, str, Any]] = []

    async def patch(self, res: Any, name: str, patch: Any, *, namespace: str = "") -> Any:
        self.patches.append((res.resource, namespace, name, patch))
        return {}


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((obj["kind"], obj["metadata"]["name"], type_, reason))


@pytest.fixture
def descriptor(monkeypatch: pytest.MonkeyPatch) -> ControllerDescriptor:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from pycm_echo.controller import descriptor as echo

    return echo


def _cm(name: str, *, labelled: bool = True, message: str | None = None, **annotations: str) -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "annotations": annotations}
    if labelled:
        meta["labels"] = {"pycm.dev/echo": "true"}
    return {"metadata": meta, "data": {} if message is None else {"message": message}}


async def _rig(descriptor: ControllerDescriptor) -> tuple[ControllerContext, FakeClient, Any]:
    bus, clock = Bus(), FakeClock()
    client, recorder = FakeClient(), FakeRecorder()
    ctx = ControllerContext(
        config=None,
        bus=bus,
        clock=clock,
        client_for=lambda name: client,  # type: ignore[arg-type,return-value]
        recorder_for=lambda name: recorder,  # type: ignore[arg-type,return-value]
        informer_factory=SharedInformerFactory(NoClient(), bus=bus, clock=clock),
        metadata_informer_factory=MetadataInformerFactory(NoClient(), bus=bus, clock=clock),
    )
    assert await descriptor.init(ctx) is not None
    return ctx, client, recorder


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("configmap", "patch", "action"),
    [
        pytest.param(
            _cm("hello", message="hi"), {"pycm.dev/echo": "hi"}, "echoed", id="message-set"
        ),
        pytest.param(
            _cm("hello", **{"pycm.dev/echo": "old"}),
            {"pycm.dev/echo": None},
            "cleared",
            id="key-gone-removed",
        ),
        pytest.param(
            _cm("hello", message="hi", **{"pycm.dev/echo": "hi"}), None, "noop", id="in-sync"
        ),
        pytest.param(_cm("hello", labelled=False, message="hi"), None, "ignored", id="unlabelled"),
    ],
)
async def test_echo_reconcile_configmap_patched_as_expected(
    descriptor: ControllerDescriptor, configmap: Any, patch: Any, action: str
) -> None:
    ctx, client, recorder = await _rig(descriptor)
    ctx.informer_factory.informer_for(CONFIGMAPS).indexer.add(configmap)
    sub = ctx.bus.subscribe(name="test", maxsize=100)
    await ctx.queues["echo"].process("default/hello")
    if patch is None:
        assert (client.patches, recorder.events) == ([], [])
    else:
        assert client.patches == [
            ("configmaps", "default", "hello", {"metadata": {"annotations": patch}})
        ]
        assert recorder.events == [("ConfigMap", "hello", "Normal", "Echoed")]
    (end,) = [e for e in sub.drain() if e.KIND == "reconcile.end"]
    assert end.action == action  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_echo_reconcile_deleted_configmap_ignored(descriptor: ControllerDescriptor) -> None:
    ctx, client, _ = await _rig(descriptor)
    await ctx.queues["echo"].process("default/gone")
    assert client.patches == []


def test_echo_descriptor_off_by_default(descriptor: ControllerDescriptor) -> None:
    assert (descriptor.name, descriptor.enabled_by_default) == ("echo", False)
