"""A response the client has read is freed by reference counting, with its body.

httpx binds a response's stream to the response (a reference cycle); left as it is, every
list page's body outlives its use until a cyclic collection — and, when the informer freezes
the heap after its initial list (``gc.freeze()``) before one ran, for as long as the process.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Awaitable, Callable, Iterator

import httpx
import pytest

from pycm.kube import Client, NotFound
from pycm.kube.resources import PODS
from tests.kube.conftest import Recorder, status


@pytest.fixture
def no_automatic_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _served(recorder: Recorder, response: httpx.Response) -> weakref.ref[httpx.Response]:
    recorder.responses.append(response)
    return weakref.ref(response)


async def _list_raw(client: Client) -> object:
    return await client.list_raw(PODS, namespace="ns", limit=500)


async def _get(client: Client) -> object:
    return await client.get(PODS, "p", namespace="ns")


@pytest.mark.asyncio
@pytest.mark.parametrize("call", [_list_raw, _get], ids=["list_raw", "get"])
async def test_a_read_response_is_freed_without_a_collection(
    client: Client,
    recorder: Recorder,
    no_automatic_gc: None,
    call: Callable[[Client], Awaitable[object]],
) -> None:
    body = b'{"kind":"Pod","metadata":{"name":"p"},"items":[]}'
    served = _served(recorder, httpx.Response(200, content=body))
    got = await call(client)
    assert got
    assert served() is None  # not waiting in a reference cycle for the collector


@pytest.mark.asyncio
async def test_an_error_response_is_freed_without_a_collection(
    client: Client, recorder: Recorder, no_automatic_gc: None
) -> None:
    served = _served(recorder, status(404, "NotFound"))
    with pytest.raises(NotFound):
        await client.get(PODS, "p", namespace="ns")
    assert served() is None
