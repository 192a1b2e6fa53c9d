"""The controller context: what the manager hands every controller's init function.

As KCM's ControllerContext. Everything here is shared by every controller of one manager and
lives while it leads:

- ``client_for(name)`` — a client of the controller's own (user agent ``pycm/<version>
  (<name>)``; with --use-service-account-credentials, authenticated as kube-system/<name>).
  With leader election its writes are fenced: each is refused unsent
  (:class:`~pycm.kube.errors.FencedError`) while the lease renew is older than the renew
  deadline, which fails the reconcile that made it.
- ``recorder_for(name)`` — an event recorder whose source component is ``name``; the manager
  runs and flushes it.
- ``informer_factory`` / ``metadata_informer_factory`` — the shared informers (full objects,
  or metadata only), started by the manager after every controller's init.
- ``informers_started`` — set once the factories are started (KCM's InformersStarted).
- ``clock``, ``bus`` (the trace bus), ``metrics`` (controller-runtime's families).
- ``max_retries`` — the running init's descriptor's (a builder's default).
- ``resource_for(group, version, kind)`` — a kind to its :class:`~pycm.kube.resources.Resource`
  over discovery (``rest_mapper``), custom resources included; ``resource_for_plural`` the same
  from a GVR (``("example.com", "v1", "websites")``).
- ``queues`` — controller name → its worker loop, which the manager's ``workqueues`` health
  check watches; :class:`~pycm.controller.builder.ControllerBuilder` registers there itself.
- :meth:`ControllerContext.add_runnable` — a background task of the controller's own that
  runs with the controllers and is stopped with them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.controller.metrics import ControllerMetrics
from pycm.controller.worker import Controller
from pycm.kube.client import Client
from pycm.kube.resources import Resource
from pycm.kube.restmapper import NoKindMatchError, RESTMapper
from pycm.record.recorder import EventRecorder
from pycm.trace.bus import Bus
from pycm.util.clock import Clock

__all__ = ["ControllerContext", "Runnable"]

Runnable = Callable[[], Coroutine[Any, Any, None]]
"""``async run()``: runs until cancelled (what an init function returns: the controller)."""


@dataclass(kw_only=True)
class ControllerContext:
    # The manager's completed configuration (a pycm.app.config.CompletedConfig; typed Any here
    # because pycm.controller sits below pycm.app in the layers).
    config: Any
    bus: Bus
    clock: Clock
    client_for: Callable[[str], Client]
    recorder_for: Callable[[str], EventRecorder]
    informer_factory: SharedInformerFactory
    metadata_informer_factory: MetadataInformerFactory
    metrics: ControllerMetrics | None = None
    informers_started: asyncio.Event = field(default_factory=asyncio.Event)
    # Controller name -> its worker loop (for the queue-progress health check).
    queues: dict[str, Controller] = field(default_factory=dict)
    # Background tasks added before the manager took them over (see add_runnable).
    pending_runnables: list[tuple[str, Runnable]] = field(default_factory=list)
    # Set by the manager once the controllers run: adds a runnable to the running group.
    on_runnable: Callable[[str, Runnable], None] | None = None
    # Kinds to resources over discovery (see resource_for); None: none (a test's context).
    rest_mapper: RESTMapper | None = None
    # The max_retries of the descriptor whose init runs now (the manager sets it before each
    # init; inits run one at a time): a ControllerBuilder's default. None retries for ever.
    max_retries: int | None = None

    async def resource_for(self, group: str, version: str, kind: str) -> Resource:
        """The resource serving ``kind`` (``("example.com", "v1", "Website")``): plural,
        scope and subresources from discovery, for the builder, the informers and the client.

        Raises :class:`~pycm.kube.restmapper.NoKindMatchError` when nothing serves it (a CRD
        not installed): raised out of ``init``, the manager stops at start-up with one line
        naming the controller and the kind — or, with ``--wait-for-resources`` (or the
        descriptor's ``wait_for_resources``), /readyz names what it waits for and ``init``
        runs again once the kind is served. Resolve kinds first in ``init``, before building."""
        if self.rest_mapper is None:
            raise NoKindMatchError(group, version, kind=kind)
        return await self.rest_mapper.resource_for(group, version, kind)

    async def resource_for_plural(self, group: str, version: str, plural: str) -> Resource:
        """The resource named by a GVR (``("example.com", "v1", "websites")``): its kind,
        scope and subresources from discovery. Not served: NoKindMatchError, with the same
        consequences as :meth:`resource_for`'s."""
        if self.rest_mapper is None:
            raise NoKindMatchError(group, version, plural=plural)
        return await self.rest_mapper.resource_for_plural(group, version, plural)

    def add_runnable(self, name: str, run: Runnable) -> None:
        """Run ``run()`` as a named task beside the controllers: started with them (after the
        informers), cancelled with them at shutdown or when leadership is lost."""
        if self.on_runnable is not None:
            self.on_runnable(name, run)
        else:
            self.pending_runnables.append((name, run))

    def register_queue(self, name: str, controller: Controller) -> None:
        """Put ``controller``'s queue under the ``workqueues`` health check."""
        if name in self.queues:
            raise ValueError(f"a controller queue named {name!r} is already registered")
        self.queues[name] = controller
