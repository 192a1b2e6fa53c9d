"""bench sim's floor (a minimal endpoint on the emulator's stack) and its lean HTTP client."""

from __future__ import annotations

import pytest

from bench._rawhttp import Connections, request
from bench._sim_floor import floor_child
from pycm.sim.server import run_emulator

_BODY = b'{"kind":"Pod","metadata":{"name":"x"}}'


@pytest.mark.asyncio
async def test_floor_answers_get_200_and_post_201_with_the_given_body() -> None:
    with floor_child(_BODY, tls=False) as (url, ca_file):
        assert ca_file is None
        assert url.startswith("http://127.0.0.1:")
        async with Connections(url, 2) as floor:
            assert await floor.one(request("GET", "/api/v1/anything", "t"), 200) == _BODY
            posted = request("POST", "/api/v1/namespaces/default/pods", "t", b'{"a": 1}' * 500)
            assert await floor.one(posted, 201) == _BODY
            gets = [request("GET", f"/p/{i}", "t") for i in range(10)]
            assert await floor.run(gets, 200) > 0


@pytest.mark.asyncio
async def test_floor_with_tls_serves_https_and_writes_its_ca() -> None:
    with floor_child(_BODY, tls=True) as (url, ca_file):
        assert url.startswith("https://127.0.0.1:")
        assert ca_file is not None
        with open(ca_file, "rb") as f:
            assert f.read().startswith(b"-----BEGIN CERTIFICATE-----")


@pytest.mark.asyncio
async def test_rawhttp_send_with_an_unexpected_status_raises_naming_it() -> None:
    async with run_emulator(tls=False, kubelet=False) as emu, Connections(emu.url, 1) as ours:
        get = request("GET", "/api/v1/namespaces/default/pods/missing", emu.admin_token)
        with pytest.raises(RuntimeError, match="status 404, want 200"):
            await ours.one(get, 200)


@pytest.mark.asyncio
async def test_rawhttp_keeps_one_connection_alive_for_many_requests() -> None:
    async with run_emulator(tls=False, kubelet=False) as emu:
        pods = "/api/v1/namespaces/default/pods"
        async with Connections(emu.url, 1) as ours:
            creates = [
                request(
                    "POST",
                    pods,
                    emu.admin_token,
                    b'{"metadata":{"name":"p-%d"},'
                    b'"spec":{"containers":[{"name":"c","image":"i"}]}}' % i,
                )
                for i in range(5)
            ]
            await ours.run(creates, 201)
        # Five requests on one connection: a connection closed after one would have failed.
        items, _ = emu.store.list(emu.store.resource("pods"), "default")
        names = [p["metadata"]["name"] for p in items]
        assert names == [f"p-{i}" for i in range(5)]
