"""core/v1 Namespace (kube's ``pkg/registry/core/namespace``): cluster-scoped, named by a
DNS-1123 label, defaulted with the ``kubernetes`` finalizer and ``phase: Active``; a DELETE
terminates it (:mod:`pycm.sim.namespace_controller`) and answers with the namespace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pycm.sim import defaults, validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy

if TYPE_CHECKING:
    from pycm.sim.gc import DeleteOptions
    from pycm.sim.resources import Resource
    from pycm.sim.store import Store

__all__ = ["STRATEGY", "NamespaceStrategy"]


class NamespaceStrategy(Strategy):
    status_subresource = True
    return_deleted_object = True
    field_labels = ("status.phase",)

    def default(self, obj: Obj) -> None:
        defaults.namespace(obj)

    def validate(self, obj: Obj) -> list[Cause]:
        return validation.metadata_causes(obj, name_is_label=True)

    def delete(
        self, store: Store, res: Resource, obj: Obj, options: DeleteOptions
    ) -> tuple[Obj, bool] | None:
        return store.namespaces.terminate(res, obj)

    def deletion_finished(self, obj: Obj) -> bool:
        return False  # the namespace controller removes it once it is empty


STRATEGY = NamespaceStrategy("Namespace")
