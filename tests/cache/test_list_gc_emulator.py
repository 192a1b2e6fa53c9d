"""The informer's initial list, over the real client against the in-process emulator, leaves
no page body behind: not waiting in a reference cycle for a collection, and not frozen.

Why it matters: with ``gc_tuning`` the list runs with the collector paused and the informer
freezes the heap (``gc.freeze()``) before the pause ends, so any cyclic garbage the list left
is kept for the process's life. Each page body is ~5.7 KB per pod; one left in a cycle per page
made the cache hold 9.4 KB per pod instead of 3.6 KB (bench ``informers.memory``).
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.cache.factory import default_list_watch
from pycm.cache.listwatch import ClientListWatch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.kube import Client, load_config
from pycm.kube.resources import PODS
from pycm.sim import run_emulator
from pycm.trace.bus import Bus

PODS_N = 25
PAGE = 10  # three pages


@pytest_asyncio.fixture
async def emulator() -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False, nodes=1, watch_window=20) as emu:
        yield emu


@pytest.fixture
def restored_gc() -> Iterator[None]:
    """The informer's GC tuning is process-wide: undo it (freeze, thresholds, pause)."""
    was, thresholds = gc.isenabled(), gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if was:
            gc.enable()
        gc.collect()


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "gc"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
    }


def _watch_list_responses(client: Client) -> list[weakref.ref[httpx.Response]]:
    """Weak references to every list page's response the client receives."""
    pages: list[weakref.ref[httpx.Response]] = []

    async def seen(resp: httpx.Response) -> None:
        if resp.request.method == "GET" and "limit" in resp.request.url.params:
            pages.append(weakref.ref(resp))

    # (List pages go through the bulk-reading client where there is one: pycm.kube.send.)
    for http in (client._http, client._watch_http):
        if http is not None:
            hooks = http.event_hooks
            http.event_hooks = {"request": hooks["request"], "response": [*hooks["response"], seen]}
    return pages


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("decoded", "tuned"),
    [
        pytest.param(True, True, id="sharing-decoder-gc-tuned"),
        pytest.param(False, True, id="json-gc-tuned"),
        pytest.param(True, False, id="sharing-decoder-gc-disabled"),
    ],
)
async def test_initial_list_leaves_no_page_body_alive(
    emulator: Any, restored_gc: None, decoded: bool, tuned: bool
) -> None:
    client = await Client.connect(
        await load_config(kubeconfig=str(emulator.kubeconfig_path), qps=-1)
    )
    try:
        for i in range(PODS_N):
            await client.create(PODS, _pod(f"p{i}"), namespace="default")
        pages = _watch_list_responses(client)
        lw = (
            default_list_watch(client, PODS, namespace="default")
            if decoded
            else ClientListWatch(client, PODS, namespace="default")
        )
        assert (lw.decoder is not None) is decoded
        informer = SharedIndexInformer(lw, "pods", bus=Bus(), gc_tuning=tuned, page_size=PAGE)
        gc.collect()
        if not tuned:
            gc.disable()  # no collection may free what the list left in a cycle
        frozen_before = gc.get_freeze_count()
        task = asyncio.create_task(informer.run(), name="test-list-gc")
        try:
            await asyncio.wait_for(informer.wait_synced(), 10)
            assert len(informer.indexer) == PODS_N
            assert len(pages) == 3
            if tuned:
                assert gc.get_freeze_count() > frozen_before  # the freeze did run
            assert [page() for page in pages] == [None, None, None]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    finally:
        await client.aclose()
