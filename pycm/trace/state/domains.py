"""The domains of the state, in one tuple, and :class:`State`: the engine over them.

Adding a domain touches this module only (beside the domain's own): its place in
:data:`DOMAINS` (the snapshot's section order), its tables' types on :class:`State`, and its
view in :func:`_state_is_each_view` (mypy checks there that :class:`State` is what each domain's
handlers take it for).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from pycm.trace.events import StepBegin
from pycm.trace.state import (
    api,
    controllers,
    errors,
    informers,
    leases,
    objects,
    queue_contents,
    queues,
    startup,
    steps,
)
from pycm.trace.state.api import ApiRecord
from pycm.trace.state.controllers import ControllerRecord
from pycm.trace.state.core import StateCore
from pycm.trace.state.domain import Domain
from pycm.trace.state.informers import InformerRecord
from pycm.trace.state.leases import LeaseRecord
from pycm.trace.state.object_histories import ObjectHistories
from pycm.trace.state.queues import QueueRecord
from pycm.trace.state.record import BoundedTable
from pycm.trace.state.schema import ErrorEntry
from pycm.trace.state.startup import InstanceRecord

__all__ = ["DOMAINS", "State"]

DOMAINS: tuple[Domain, ...] = (
    startup,
    leases,
    informers,
    controllers,
    queues,
    api,
    steps,
    errors,
    objects,
)


class State(StateCore):
    """The state of an event stream over every domain (see :class:`StateCore`)."""

    domains = DOMAINS

    instances: BoundedTable[str, InstanceRecord]
    leases: BoundedTable[str, LeaseRecord]
    informers: BoundedTable[tuple[str, str], InformerRecord]
    controllers: BoundedTable[tuple[str, str], ControllerRecord]
    queues: BoundedTable[tuple[str, str], QueueRecord]
    api: BoundedTable[str, ApiRecord]
    open: dict[str, StepBegin]
    ended_early: dict[str, None]
    errors: deque[ErrorEntry]
    objects: ObjectHistories  # each object's history (in snapshots only when asked)


if TYPE_CHECKING:

    def _state_is_each_view(
        state: State,
    ) -> tuple[
        startup.StateView,
        leases.StateView,
        informers.StateView,
        controllers.StateView,
        queue_contents.StateView,
        queues.StateView,
        api.StateView,
        steps.StateView,
        errors.StateView,
        objects.StateView,
    ]:
        return (state, state, state, state, state, state, state, state, state, state)
