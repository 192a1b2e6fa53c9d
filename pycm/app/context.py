"""The controller context as the manager builds it (KCM's CreateControllerContext).

The type itself is public and lives with the controller API
(:class:`pycm.controller.ControllerContext`), so plugins import it from there; this module
re-exports it for the composition root, keeps KCM's resync-period jitter, and builds one: both
informer factories over the root client, and the per-controller client and event recorder
factories (``client_for`` fenced by the elector's renew gate, ``recorder_for`` not).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol, cast

from pycm import __version__
from pycm.app.clients import EventSinkAdapter
from pycm.app.features import WATCH_LIST_CLIENT
from pycm.app.parts import Parts
from pycm.app.runnables import Group
from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.controller.context import ControllerContext
from pycm.controller.metrics import ControllerMetrics
from pycm.controller.worker import ReconcileGate
from pycm.kube import Client
from pycm.kube.fence import WriteFence
from pycm.kube.restmapper import RESTMapper
from pycm.record import EventRecorder

__all__ = ["ControllerContext", "ControllerGate", "build_context", "resync_period"]


class ControllerGate(WriteFence, ReconcileGate, Protocol):
    """What fences a controller's writes and holds its workers' next key: the elector's renew
    gate (pycm.leaderelection.gate), or a sharded member's Lease (pycm.app.sharding)."""


def resync_period(min_resync_period: float, rng: random.Random) -> float:
    """KCM's ResyncPeriod: min_resync_period × (1 + rand) — 12–24 h by default, so the
    informers of one manager do not all resync at once."""
    return min_resync_period * (1.0 + rng.random())


def build_context(
    parts: Parts,
    root: Client,
    *,
    rng: random.Random,
    metrics: ControllerMetrics,
    gate: ControllerGate | None,
    service_accounts: Callable[[str], Client] | None,
) -> ControllerContext:
    """The context StartControllers hands each controller's init. ``gate``: the elector's
    renew gate (None without leader election); ``service_accounts``: the client builder of
    --use-service-account-credentials (None: the root's credentials under each controller's
    name). The event recorders join the CACHES group as they are asked for."""
    config, identity, bus, clock = parts.config, parts.identity, parts.bus, parts.clock
    resync = resync_period(config.generic.min_resync_period, rng)
    # The factories' structural client protocol is wider than mypy can match to Client.
    informer_client = cast(Any, root)
    # Informers stream their lists unless --feature-gates=WatchListClient=false.
    watch_list = config.feature_gates.enabled(WATCH_LIST_CLIENT)
    options: dict[str, Any] = {
        "default_resync": resync,
        "bus": bus,
        "clock": clock,
        "rng": rng,
        "watch_list": watch_list,
    }
    factory = SharedInformerFactory(informer_client, **options)
    metadata_factory = MetadataInformerFactory(informer_client, **options)
    clients: dict[str, Client] = {}
    fenced: dict[str, Client] = {}
    build = service_accounts or (lambda name: root.with_user_agent(f"pycm/{__version__} ({name})"))
    # With leader election, every write a controller makes passes the elector's renew gate
    # right before it is sent (pycm.leaderelection.gate): a replica whose renew is older
    # than the renew deadline writes nothing. The lease calls (the elector's own client)
    # and the Events (see recorder_for) are not fenced.

    def unfenced_for(name: str) -> Client:
        # Each controller's own client: a service account's (--use-service-account-
        # credentials), or the root's credentials and connections under its own name.
        if name not in clients:
            clients[name] = build(name)
        return clients[name]

    def client_for(name: str) -> Client:
        if gate is None:
            return unfenced_for(name)
        if name not in fenced:
            fenced[name] = unfenced_for(name).with_fence(gate)
        return fenced[name]

    recorders: dict[str, EventRecorder] = {}

    def recorder_for(name: str) -> EventRecorder:
        # One per name (a builder asks for its controller's on its first TerminalError).
        if name in recorders:
            return recorders[name]
        # Events are not fenced, as KCM's recorder is independent of leadership: they
        # change nothing a controller acts on, and a deposed leader's last events tell of
        # writes that did land (or were fenced) — dropping them would hide exactly that.
        recorder = EventRecorder(
            EventSinkAdapter(unfenced_for(name)),
            component=name,
            host=identity.split("_")[0],
            clock=clock,
            bus=bus,
        )
        # With the caches: they stop after the controllers, so the last events are sent.
        parts.groups.add(Group.CACHES, f"event recorder {name}", recorder.run)
        recorders[name] = recorder
        return recorder

    return ControllerContext(
        config=config,
        rest_mapper=RESTMapper(root),
        bus=bus,
        clock=clock,
        client_for=client_for,
        informer_factory=factory,
        metadata_informer_factory=metadata_factory,
        recorder_for=recorder_for,
        metrics=metrics,
    )
