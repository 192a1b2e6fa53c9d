"""core/v1 Event (kube's ``pkg/registry/core/event``): expires ``--event-ttl`` after its last
write (:mod:`pycm.sim.event_ttl`); its involvedObject's namespace must be its own; selectable by
the involved object, reason, source and type.
"""

from __future__ import annotations

from pycm.sim import validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy

__all__ = ["STRATEGY", "EventStrategy"]


class EventStrategy(Strategy):
    expires = True
    field_labels = (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    )

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + validation.event_causes(obj)


STRATEGY = EventStrategy("Event")
