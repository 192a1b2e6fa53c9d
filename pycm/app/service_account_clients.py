"""--use-service-account-credentials: KCM's SAControllerClientBuilder. Each controller's client
is authenticated as kube-system/<name> (its account made on first use) with a token its own
:class:`~pycm.app.serviceaccounts.ServiceAccountTokenSource` asks for; the first tokens are
awaited before the controllers run, so a cluster that cannot issue them stops the manager
with one line (KCM's ClientOrDie)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from pycm import __version__
from pycm.app.errors import ManagerError
from pycm.app.serviceaccounts import (
    SERVICE_ACCOUNT_NAMESPACE,
    ServiceAccountTokenSource,
    username_for,
)
from pycm.kube import Client
from pycm.kube.errors import KubeError
from pycm.kube.transport import build_ssl_context
from pycm.trace.bus import Bus
from pycm.util.clock import Clock

__all__ = ["ServiceAccountClients"]


class ServiceAccountClients:
    """The service-account clients of one manager, built from ``root``'s configuration
    without its credentials; ``adopt(client)`` hands each to the manager, which closes it at
    shutdown."""

    def __init__(
        self,
        root: Client,
        *,
        bus: Bus,
        clock: Clock,
        metrics_registry: CollectorRegistry,
        adopt: Callable[[Client], None],
    ) -> None:
        self.root = root
        self.bus = bus
        self.clock = clock
        self.metrics_registry = metrics_registry
        self.adopt = adopt
        # Each controller's client's token source, in the order they were asked for.
        self.sources: list[ServiceAccountTokenSource] = []

    async def builder(self) -> Callable[[str], Client]:
        """``client_for(name)``: a client authenticated as kube-system/<name>; the TLS context
        is built once, here, off the event loop."""
        root = self.root
        anonymous = root.config.with_overrides(
            token=None, token_file=None, auth_refresh=None, cert_file=None, key_file=None
        )
        ssl_context = None
        if anonymous.server.startswith("https"):
            ssl_context = await asyncio.to_thread(build_ssl_context, anonymous)

        def build(name: str) -> Client:
            source = ServiceAccountTokenSource(
                root,
                SERVICE_ACCOUNT_NAMESPACE,
                name,
                controller=name.removesuffix("-controller"),
                clock=self.clock,
                bus=self.bus,
            )
            user = username_for(SERVICE_ACCOUNT_NAMESPACE, name)
            client = Client(
                anonymous.with_overrides(
                    token_source=source, user_agent=f"pycm/{__version__} ({name})/{user}"
                ),
                ssl_context=ssl_context,
                bus=self.bus,
                registry=self.metrics_registry,
                clock=self.clock,
            )
            self.adopt(client)
            self.sources.append(source)
            return client

        return build

    async def first_tokens(self) -> None:
        """Every service-account client's first token, so a cluster that cannot issue them
        stops the manager here with a clear message (KCM's ClientOrDie)."""
        results = await asyncio.gather(
            *(source.token() for source in self.sources), return_exceptions=True
        )
        for result in results:
            if isinstance(result, KubeError):
                raise ManagerError(f"--use-service-account-credentials: {result}")
            if isinstance(result, BaseException):
                raise result
