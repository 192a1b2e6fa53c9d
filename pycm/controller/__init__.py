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
  factories, ``informers_started``, ``clock``, ``bus``, ``metrics``, ``add_runnable``, and
  ``await resource_for(group, version, kind)`` (any kind, custom resources included, over
  discovery).
- :class:`ControllerBuilder` — ``for_`` / ``owns`` / ``watches`` then ``complete(reconcile)``:
  informers → handlers → rate-limited queue → workers, health check, traces and metrics. The
  built-ins use it too: KCM's owner fan-out (``controls``, :mod:`~pycm.controller.owner_events`),
  rules that see an event's old and new objects (``handles``), and ``build(sync)``.
- The reconcile contract (:mod:`~pycm.controller.reconcile`): return ``None`` or ``Result()`` →
  done; ``Result(requeue_after=s)`` → again in ``s`` seconds; ``Result(requeue=True)`` → again
  with backoff; raise → retried with backoff, for ever unless the descriptor sets
  ``max_retries`` (409 Conflict quietly); raise :class:`TerminalError` → a Warning event on
  the object, dropped, counted.

The helpers every operator writes, each traced inside the reconcile that calls it:

- finalizers (:mod:`~pycm.controller.finalizers`): ``add_finalizer``, ``remove_finalizer``,
  ``has_finalizer``, ``is_being_deleted`` — idempotent, with a resourceVersion precondition;
- status conditions (:mod:`~pycm.controller.conditions`): ``set_condition`` (written through
  the status subresource), the pure ``set_status_condition`` and ``find_status_condition``,
  with apimachinery's lastTransitionTime and observedGeneration semantics;
- owner references (:mod:`~pycm.controller.ownerrefs`): ``set_controller_reference``,
  ``set_owner_reference``;
- ``create_or_update`` and ``ignore_not_found`` (:mod:`~pycm.controller.create_or_update`);
  server-side apply is ``Client.apply``; timers are ``Result(requeue_after=s)``.

Errors: ``TerminalError`` (raised by a reconcile: a Warning event on the object, the key
dropped) and ``AlreadyOwnedError`` (a ``ValueError``: the object has another controller);
wiring mistakes in the builder raise ``ValueError`` at init, which stops the manager's start-up.

The machinery the built-in controllers use besides: :mod:`~pycm.controller.expectations`,
:mod:`~pycm.controller.ref_manager`, :mod:`~pycm.controller.pod_control`,
:mod:`~pycm.controller.metrics`; the manager runs :mod:`~pycm.controller.stuck` (the
stuck-worker watcher) beside them.
"""

from pycm.controller.builder import ControllerBuilder, MapFunc, Predicate, Reconciler, Request
from pycm.controller.conditions import (
    Condition,
    find_status_condition,
    is_status_condition_true,
    remove_status_condition,
    set_condition,
    set_status_condition,
)
from pycm.controller.context import ControllerContext, Runnable
from pycm.controller.create_or_update import EnsureResult, create_or_update, ignore_not_found
from pycm.controller.descriptor import ENTRY_POINT_GROUP, ControllerDescriptor, InitFunc
from pycm.controller.expectations import ControllerExpectations, UIDTrackingExpectations
from pycm.controller.finalizers import (
    add_finalizer,
    has_finalizer,
    is_being_deleted,
    remove_finalizer,
)
from pycm.controller.metrics import ControllerMetrics
from pycm.controller.ownerrefs import (
    AlreadyOwnedError,
    set_controller_reference,
    set_owner_reference,
)
from pycm.controller.reconcile import Result, TerminalError
from pycm.controller.worker import Controller, Trigger

__all__ = [
    "ENTRY_POINT_GROUP",
    "AlreadyOwnedError",
    "Condition",
    "Controller",
    "ControllerBuilder",
    "ControllerContext",
    "ControllerDescriptor",
    "ControllerExpectations",
    "ControllerMetrics",
    "EnsureResult",
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
    "add_finalizer",
    "create_or_update",
    "find_status_condition",
    "has_finalizer",
    "ignore_not_found",
    "is_being_deleted",
    "is_status_condition_true",
    "remove_finalizer",
    "remove_status_condition",
    "set_condition",
    "set_controller_reference",
    "set_owner_reference",
    "set_status_condition",
]
