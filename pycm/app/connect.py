"""The manager's API clients before anything runs: the root client (or one for delegated
authentication/authorization) from the client configuration, and the wait for the API
server's /healthz (KCM's WaitForAPIServer: polling 1 s, at most 10 s)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from pycm.app.config import CompletedConfig
from pycm.app.errors import EXIT_USAGE, ManagerError
from pycm.kube import Client, ConfigError, load_config
from pycm.trace.bus import Bus
from pycm.util.clock import Clock

__all__ = ["API_SERVER_WAIT", "connect", "wait_for_api_server"]

API_SERVER_WAIT = 10.0


async def connect(
    config: CompletedConfig,
    *,
    bus: Bus,
    registry: CollectorRegistry,
    clock: Clock,
    export_ratio: float,
    kubeconfig: str | None = None,
) -> Client:
    """The root client (or, with ``kubeconfig``, a client for delegated authn/authz);
    ``export_ratio`` is the share of traces exported by ratio (the traceparent flag)."""
    try:
        client_config = await load_config(
            kubeconfig=kubeconfig or config.misc.kubeconfig or None,
            master=None if kubeconfig else config.misc.master or None,
            qps=config.generic.kube_api_qps,
            burst=config.generic.kube_api_burst,
            user_agent="pycm",
        )
    except ConfigError as exc:
        raise ManagerError(f"invalid client configuration: {exc}", exit_code=EXIT_USAGE) from None
    client_config = client_config.with_overrides(trace_sample_ratio=export_ratio)
    return await Client.connect(client_config, bus=bus, registry=registry, clock=clock)


async def wait_for_api_server(client: Client, clock: Clock) -> None:
    deadline = clock.monotonic() + API_SERVER_WAIT
    last = ""
    while True:
        try:
            await client.request("GET", "/healthz", verb="get")
            return
        except Exception as exc:
            last = str(exc)
        if clock.monotonic() >= deadline:
            raise ManagerError(f"failed to wait for apiserver being healthy: {last or 'no answer'}")
        await clock.sleep(1.0)
