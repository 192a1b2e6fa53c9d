"""The CustomResourceDefinition kind itself (``apiextensions.k8s.io/v1``): its strategy and
its Resource (cluster-scoped, short name ``crd``, category ``api-extensions``, a status
subresource, printed as NAME and CREATED AT).

The strategy defaults and validates the CRD (:mod:`pycm.sim.crd.definition`), resets a sent
status on create, and hands every committed write and every deletion to the controller
(:mod:`pycm.sim.crd.controller`), which sets the conditions and serves the custom resource.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pycm.sim import validation
from pycm.sim.crd.definition import apply_crd_defaults, validate_crd, validate_crd_update
from pycm.sim.crd.shape import check_crd_shape
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import DEFAULT_PRINTER

if TYPE_CHECKING:
    from pycm.sim.gc import DeleteOptions
    from pycm.sim.resources import Resource
    from pycm.sim.store import Store

__all__ = ["STRATEGY", "CRDStrategy"]


class CRDStrategy(Strategy):
    status_subresource = True
    generation_on_spec = True

    def check_shape(self, obj: Any) -> None:
        super().check_shape(obj)
        check_crd_shape(obj)

    def default(self, obj: Obj) -> None:
        apply_crd_defaults(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        obj.pop("status", None)  # the controller writes it once the CRD is stored

    def validate(self, obj: Obj) -> list[Cause]:
        return validation.metadata_causes(obj, name_is_label=False) + validate_crd(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = validation.metadata_causes(new, name_is_label=False)
        return causes + validate_crd_update(new, old)

    def committed(self, store: Store, res: Resource, event_type: str, obj: Obj) -> None:
        from pycm.sim.crd.controller import crd_deleted, crd_removed, sync_crd

        if event_type == "DELETED":
            crd_deleted(store, obj)  # still serving (its cleanup finalizer was taken off)
            crd_removed(store, obj)
        else:
            sync_crd(store, obj)

    def delete(
        self, store: Store, res: Resource, obj: Obj, options: DeleteOptions
    ) -> tuple[Obj, bool] | None:
        from pycm.sim.crd.cleanup import delete_crd

        return delete_crd(store, res, obj)  # None: the generic deletion (finalizers honoured)


STRATEGY = CRDStrategy("CustomResourceDefinition", DEFAULT_PRINTER)
