"""The kinds whose strategy is the generic one, at most with a validator of their own: Node
(status subresource; ``spec.unschedulable`` selectable), ConfigMap (keys, 1 MiB,
``immutable``), Lease (positive duration), and the kinds stored as sent (ServiceAccount, the
create-only reviews). A kind gains a module of its own when its
strategy does more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pycm.sim import validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.secrets import immutable_data_causes
from pycm.sim.registry.strategy import Strategy

__all__ = ["CONFIG_MAP", "LEASE", "NODE", "PlainStrategy"]


class PlainStrategy(Strategy):
    """The generic strategy plus an optional validator of the kind's own fields."""

    def __init__(
        self,
        kind: str,
        causes: Callable[[Mapping[str, Any]], list[Cause]] | None = None,
        update_causes: Callable[[Obj, Obj], list[Cause]] | None = None,
        *,
        status_subresource: bool = False,
        field_labels: tuple[str, ...] = (),
    ) -> None:
        super().__init__(kind)
        self._causes = causes
        self._update_causes = update_causes
        self.status_subresource = status_subresource
        self.field_labels = field_labels

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        if self._causes is not None:
            causes += self._causes(obj)
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self._update_causes(new, old) if self._update_causes is not None else []
        return causes + self.validate(new)


NODE = PlainStrategy("Node", status_subresource=True, field_labels=("spec.unschedulable",))
CONFIG_MAP = PlainStrategy(
    "ConfigMap",
    validation.configmap_causes,
    lambda new, old: immutable_data_causes(new, old, ("data", "binaryData")),
)
LEASE = PlainStrategy("Lease", validation.lease_causes)
