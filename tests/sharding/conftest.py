"""The sharding tests' emulator: plain HTTP, no kubelet, and pycm's client on it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from pycm.kube.client import Client
from pycm.kube.config import load_config
from pycm.sim import run_emulator


@pytest_asyncio.fixture
async def kube() -> AsyncIterator[tuple[Client, Any]]:
    async with run_emulator(tls=False, kubelet=False, nodes=1) as emu:
        pycm_client = await Client.connect(
            await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
        )
        try:
            yield pycm_client, emu
        finally:
            await pycm_client.aclose()
