"""The public controller API, and the machinery every controller of pycm shares.

Writing a controller (docs/controllers.md walks through one) needs only this module::

    from pycm.controller import (
        ControllerBuilder, ControllerContext, ControllerDescriptor, Request, Result,
        TerminalError,
    )

- :class:`ControllerDescriptor` — name, aliases, on by default or not, ``async init(ctx)``;
  exposed by a plugin distribution under the entry-point group ``pycm.controllers``.
- :class:`ControllerContext` — what ``init`` receives: ``client_for(name)`` (a typed
  :class:`~pycm.kube.client.Client`), ``recorder_for(name)`` (an event recorder), both informer
  factories, ``informers_started``, ``clock``, ``bus``, ``metrics``, ``add_runnable``.
- :class:`ControllerBuilder` — ``for_`` / ``owns`` / ``watches`` then ``complete(reconcile)``:
  informers → handlers → rate-limited queue → workers, health check, traces and metrics.
- The reconcile contract (:mod:`~pycm.controller.worker`): return ``None`` or ``Result()`` →
  done; ``Result(requeue_after=s)`` → again in ``s`` seconds; ``Result(requeue=True)`` → again
  with backoff; raise → retried with backoff (409 Conflict quietly); raise
  :class:`TerminalError` → dropped, counted.

Errors: ``TerminalError`` (raised by a reconcile) is the only exception of this API; wiring
mistakes in the builder raise ``ValueError`` at init, which stops the manager's start-up.

The machinery the built-in controllers use besides: :mod:`~pycm.controller.expectations`,
:mod:`~pycm.controller.ref_manager`, :mod:`~pycm.controller.pod_control`,
:mod:`~pycm.controller.metrics`; the manager runs :mod:`~pycm.controller.stuck` (the
stuck-worker watcher) beside them.
"""

from pycm.controller.builder import ControllerBuilder, MapFunc, Predicate, Reconciler, Request
from pycm.controller.context import ControllerContext, Runnable
from pycm.controller.descriptor import ENTRY_POINT_GROUP, ControllerDescriptor, InitFunc
from pycm.controller.expectations import ControllerExpectations, UIDTrackingExpectations
from pycm.controller.metrics import ControllerMetrics
from pycm.controller.worker import Controller, Result, TerminalError, Trigger

__all__ = [
    "ENTRY_POINT_GROUP",
    "Controller",
    "ControllerBuilder",
    "ControllerContext",
    "ControllerDescriptor",
    "ControllerExpectations",
    "ControllerMetrics",
    "InitFunc",
    "MapFunc",
    "Predicate",
    "Reconciler",
    "Request",
    "Result",
    "Runnable",
    "TerminalError",
    "Trigger",
    "UIDTrackingExpectations",
]
