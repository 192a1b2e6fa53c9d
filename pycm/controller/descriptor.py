"""A controller descriptor: how the manager knows a controller, built in or plugged in.

As KCM's ``ControllerDescriptor``: a canonical name, aliases, whether ``*`` in --controllers
enables it, and an init function. ``async init(ctx)`` builds the controller — registering the
informers it needs — and returns the coroutine function that runs it (or None: "not started");
the manager runs it only after every controller is built and the informers are started.

A plugin distribution exposes one descriptor per entry point in the group
``pycm.controllers`` (see docs/controllers.md)::

    [project.entry-points."pycm.controllers"]
    echo = "pycm_echo.controller:descriptor"
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pycm.controller.context import ControllerContext, Runnable

__all__ = [
    "ENTRY_POINT_GROUP",
    "SHARD_BY_NAMESPACE",
    "SHARD_BY_UID",
    "SINGLETON",
    "ControllerDescriptor",
    "InitFunc",
]

ENTRY_POINT_GROUP = "pycm.controllers"

InitFunc = Callable[[ControllerContext], Awaitable[Runnable | None]]
"""``async init(ctx) -> run | None`` (None: the controller chose not to start)."""

# How a controller runs under ``pycm run --sharded`` (its descriptor's ``sharding``):
SHARD_BY_NAMESPACE = "namespace"  # every member, on its share of the namespaces
SHARD_BY_UID = "uid"  # every member, on its share of the objects' uids (its for_ resource's)
SINGLETON = "singleton"  # once: on the elected leader only (a controller that sees everything)
_SHARDINGS = (SHARD_BY_NAMESPACE, SHARD_BY_UID, SINGLETON)


@dataclass(frozen=True, slots=True)
class ControllerDescriptor:
    name: str
    init: InitFunc
    aliases: tuple[str, ...] = ()
    enabled_by_default: bool = True
    # Informer resources the controller needs synced before its workers start (for docs).
    requires: tuple[str, ...] = ()
    # How often a ControllerBuilder-built controller retries a failing key before dropping it;
    # None (the default): for ever, with the default limiter's backoff capped at 1000 s, as
    # controller-runtime and kopf do. (The built-ins keep KCM's 15: they set it themselves.)
    max_retries: int | None = None
    # When init fails because a kind is not served (NoKindMatchError: a CRD not installed
    # yet), wait for it — /readyz names it — instead of stopping the manager (as the
    # manager-wide --wait-for-resources does for every controller).
    wait_for_resources: bool = False
    # Under --sharded: "namespace" (its keys are "<namespace>/<name>"; each member reconciles
    # the keys of its namespaces, its informers cache only those), "uid" (each member
    # reconciles the objects of its for_ resource whose uid hashes into its share, and caches
    # only those of that resource: objects that stand alone, many in one namespace or
    # cluster-scoped; needs a ControllerBuilder-built controller) or "singleton" (one replica
    # runs it, elected as without sharding: a controller that must see every object at once).
    # Without --sharded it changes nothing.
    sharding: str = SHARD_BY_NAMESPACE

    def __post_init__(self) -> None:
        if self.sharding not in _SHARDINGS:
            raise ValueError(
                f"controller {self.name!r}: sharding must be one of {', '.join(_SHARDINGS)}, "
                f"got {self.sharding!r}"
            )
