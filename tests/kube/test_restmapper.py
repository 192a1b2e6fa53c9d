"""The REST mapper against the emulator's discovery: kinds and plurals to resources (scope,
subresources), the preferred version, apimachinery's "no matches" message, a miss read again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from pycm.kube.client import Client
from pycm.kube.config import load_config
from pycm.kube.resources import DEPLOYMENTS, Resource
from pycm.kube.restmapper import NoKindMatchError, RESTMapper
from pycm.sim.server import run_emulator
from pycm.trace.bus import Bus

CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
WEBSITE_CRD = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "examples/website-operator/deploy/crd.yaml").read_text()
)


@pytest_asyncio.fixture
async def client() -> AsyncIterator[Client]:
    async with run_emulator(tls=False, kubelet=False, nodes=0) as emu:
        config = await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
        async with await Client.connect(config, bus=Bus()) as c:
            yield c


class CountingClient:
    """The client, counting the discovery documents it is asked for."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.paths: list[str] = []

    async def request(self, method: str, path: str, *, verb: str = "") -> Any:
        self.paths.append(path)
        return await self.client.request(method, path, verb=verb)


async def _website_once_established(mapper: RESTMapper, version: str) -> Resource:
    """The Website CRD's resource, asked for until the CRD is established (within moments)."""
    for _ in range(200):
        try:
            return await mapper.resource_for("example.com", version, "Website")
        except NoKindMatchError:
            await asyncio.sleep(0.05)
    raise AssertionError("the CRD's kind was never found")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("gvk", "expected"),
    [
        pytest.param(("apps", "v1", "Deployment"), DEPLOYMENTS, id="deployment"),
        pytest.param(
            ("", "v1", "ConfigMap"), Resource("", "v1", "configmaps", "ConfigMap", True), id="core"
        ),
        pytest.param(("apps", "", "Deployment"), DEPLOYMENTS, id="preferred-version"),
        pytest.param(
            ("", "v1", "Namespace"),
            Resource("", "v1", "namespaces", "Namespace", False, frozenset({"status"})),
            id="cluster-scoped",
        ),
    ],
)
async def test_resource_for_kind_finds_plural_scope_subresources(
    client: Client, gvk: tuple[str, str, str], expected: Resource
) -> None:
    found = await RESTMapper(client).resource_for(*gvk)
    assert (found.group, found.version, found.resource, found.kind, found.namespaced) == (
        expected.group,
        expected.version,
        expected.resource,
        expected.kind,
        expected.namespaced,
    )
    assert expected.subresources <= found.subresources


@pytest.mark.asyncio
async def test_resource_for_plural_finds_kind(client: Client) -> None:
    found = await RESTMapper(client).resource_for_plural("apps", "v1", "replicasets")
    assert (found.kind, found.namespaced) == ("ReplicaSet", True)
    assert {"status", "scale"} <= found.subresources


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            ("kind", "example.com", "v1", "Website"),
            'no matches for kind "Website" in version "example.com/v1"',
            id="group-not-served",
        ),
        pytest.param(
            ("kind", "apps", "v1", "Website"),
            'no matches for kind "Website" in version "apps/v1"',
            id="kind-not-in-group",
        ),
        pytest.param(
            ("kind", "apps", "v9", "Deployment"),
            'no matches for kind "Deployment" in version "apps/v9"',
            id="version-not-served",
        ),
        pytest.param(
            ("plural", "example.com", "v1", "websites"),
            "no matches for example.com/v1, Resource=websites",
            id="gvr",
        ),
    ],
)
async def test_not_served_raises_no_kind_match_with_apimachinerys_message(
    client: Client, call: tuple[str, str, str, str], message: str
) -> None:
    mapper = RESTMapper(client)
    how, group, version, name = call
    lookup = mapper.resource_for if how == "kind" else mapper.resource_for_plural
    with pytest.raises(NoKindMatchError) as info:
        await lookup(group, version, name)
    assert str(info.value) == message
    assert (info.value.group, info.value.version) == (group, version)


@pytest.mark.asyncio
async def test_documents_are_cached_and_a_miss_reads_again(client: Client) -> None:
    counting = CountingClient(client)
    mapper = RESTMapper(counting)
    await mapper.resource_for("apps", "v1", "Deployment")
    await mapper.resource_for("apps", "v1", "ReplicaSet")
    assert counting.paths == ["/apis/apps/v1"]  # one read serves both
    with pytest.raises(NoKindMatchError):
        await mapper.resource_for("apps", "v1", "Website")
    assert counting.paths == ["/apis/apps/v1", "/apis/apps/v1"]  # the miss read it again
    mapper.reset()
    await mapper.resource_for("apps", "v1", "Deployment")
    assert counting.paths[-1] == "/apis/apps/v1" and len(counting.paths) == 3


@pytest.mark.asyncio
async def test_a_crd_installed_after_a_miss_is_found_with_its_scope_and_status(
    client: Client,
) -> None:
    mapper = RESTMapper(client)
    with pytest.raises(NoKindMatchError):
        await mapper.resource_for("example.com", "v1", "Website")
    await client.create(CRDS, WEBSITE_CRD)
    found = await _website_once_established(mapper, "")
    assert found == Resource(
        "example.com", "v1", "websites", "Website", True, frozenset({"status"})
    )
    assert await mapper.resource_for_plural("example.com", "v1", "websites") == found


@pytest.mark.asyncio
async def test_a_controllers_context_resolves_a_gvr_as_it_resolves_a_kind(client: Client) -> None:
    """``ctx.resource_for_plural``: a controller that names its resource by GVR gets the same
    Resource (kind and scope found) as one that names the kind; not served is NoKindMatchError,
    as it is without a mapper (a test's context)."""
    from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
    from pycm.controller import ControllerContext
    from pycm.util.clock import FakeClock

    def context(mapper: RESTMapper | None) -> ControllerContext:
        return ControllerContext(
            config=None,
            bus=Bus(),
            clock=FakeClock(),
            client_for=lambda name: client,
            recorder_for=lambda name: pytest.fail(f"no recorder expected: {name}"),
            informer_factory=SharedInformerFactory(client),
            metadata_informer_factory=MetadataInformerFactory(client),
            rest_mapper=mapper,
        )

    ctx = context(RESTMapper(client))
    by_gvr = await ctx.resource_for_plural("apps", "v1", "deployments")
    assert by_gvr == await ctx.resource_for("apps", "v1", "Deployment") == DEPLOYMENTS
    assert await ctx.resource_for_plural("", "v1", "namespaces") == Resource(
        "", "v1", "namespaces", "Namespace", False, frozenset({"status"})
    )
    gvr_message = "no matches for example.com/v1, Resource=websites"
    for unserved in (ctx, context(None)):
        with pytest.raises(NoKindMatchError) as info:
            await unserved.resource_for_plural("example.com", "v1", "websites")
        assert (str(info.value), info.value.plural) == (gvr_message, "websites")


@pytest.mark.asyncio
async def test_a_custom_resource_gets_full_and_metadata_only_shared_informers(
    client: Client,
) -> None:
    """What the mapper returns for a CRD's kind works in both informer factories as a built-in
    constant does: listers of full objects and of PartialObjectMetadata, events traced under
    the resource's name."""
    from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
    from pycm.trace.kinds import InformerSynced

    await client.create(CRDS, WEBSITE_CRD)
    mapper = RESTMapper(client)
    websites = await _website_once_established(mapper, "v1")
    site = {"metadata": {"name": "shop", "namespace": "default"}, "spec": {"image": "nginx"}}
    await client.create(websites, site)
    bus = Bus()
    full = SharedInformerFactory(client, bus=bus, gc_tuning=False)
    meta = MetadataInformerFactory(client, bus=bus, gc_tuning=False)
    lister, meta_lister = full.lister_for(websites), meta.lister_for(websites)
    full.start(), meta.start()
    try:
        synced = [await f.wait_for_cache_sync(timeout=10) for f in (full, meta)]
        assert synced == [{websites: True}, {websites: True}]
        whole, partial = lister.get("default", "shop"), meta_lister.get("default", "shop")
        assert whole is not None and whole["spec"] == {"image": "nginx", "replicas": 1}
        assert partial is not None and partial["kind"] == "PartialObjectMetadata"
        assert set(partial) <= {"apiVersion", "kind", "metadata"}
        assert partial["metadata"]["uid"] == whole["metadata"]["uid"]
        names = {e.resource for e in bus.recent() if isinstance(e, InformerSynced)}
        assert names == {"websites.example.com"}
    finally:
        await full.shutdown(timeout=5)
        await meta.shutdown(timeout=5)
