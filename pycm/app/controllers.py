"""The built-in controllers' descriptors, and the registry ``pycm run`` builds from them.

Built-ins and plugins take one path: a :class:`~pycm.controller.ControllerDescriptor` whose
init receives the :class:`~pycm.controller.ControllerContext`, builds the controller with a
:class:`~pycm.controller.ControllerBuilder` (which registers the informers it needs) and
returns the coroutine function that runs it; the manager runs those only after every
controller is built and the informer factories are started, as KCM does. A built-in's
descriptor and init live in its package (``pycm/controllers/<name>/descriptor.py``); this
module lists them.

:func:`build_registry` is called explicitly — by the command before it parses flags, and by
the manager when it is given none — so importing this module registers nothing anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata

from pycm.app.registry import BUILT_IN, IN_CODE, Registry, default_registry, load_plugins
from pycm.controller import Runnable
from pycm.controllers.deployment import descriptor as deployment
from pycm.controllers.replicaset import descriptor as replicaset

__all__ = ["BUILT_INS", "DEPLOYMENT", "REPLICASET", "Runnable", "build_registry"]

# The built-in controllers: one line each (a package's DESCRIPTOR; docs/controllers.md,
# "Adding a built-in controller").
BUILT_INS = (
    deployment.DESCRIPTOR,
    replicaset.DESCRIPTOR,
)
DEPLOYMENT = deployment.DESCRIPTOR  # (the names callers import)
REPLICASET = replicaset.DESCRIPTOR


def build_registry(
    *,
    plugins: bool = True,
    entry_points: Iterable[metadata.EntryPoint] | None = None,
) -> Registry:
    """A fresh registry: the built-ins, the descriptors registered in code on
    :func:`~pycm.app.registry.default_registry`, then (``plugins``) those of the entry-point
    group ``pycm.controllers`` (or of ``entry_points``, for tests). Raises
    :class:`~pycm.app.registry.RegistryError` / ``PluginError`` on a collision or a broken
    plugin."""
    registry = Registry()
    for descriptor in BUILT_INS:
        registry.register(descriptor, source=BUILT_IN)
    for descriptor in default_registry():
        registry.register(descriptor, source=IN_CODE)
    if plugins:
        load_plugins(registry, entry_points)
    return registry
