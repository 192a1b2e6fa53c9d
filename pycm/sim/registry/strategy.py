"""The strategy of one kind: what kube-apiserver's ``pkg/registry/<group>/<kind>/strategy.go``
decides for it, and nothing the generic store decides for every kind.

The store (:mod:`pycm.sim.store`) runs the same steps for every kind and asks the resource's
strategy at each kind-specific point — an attribute lookup, never a chain of ``if kind ==``:

create:  ``check_shape`` (400) → ``decode`` → ``default`` → ``prepare_for_create`` (unless
         seeding with status) → ``validate`` (422) → stored, ``metadata.generation`` 1 when
         ``generation_on_spec``.
update:  ``check_shape`` → ``decode`` → ``prepare_for_update`` (the main resource: with a status
         subresource the stored status is kept) or ``prepare_for_status_update`` (``/status``:
         only the status is taken) → the store's metadata rules → ``default`` →
         ``validate_update`` (422) → ``generation_changed`` bumps ``metadata.generation``.
delete:  ``delete`` may take the deletion over (a namespace terminates); else
         ``grace_period`` (seconds a kubelet has to confirm) and ``deletion_finished`` (may an
         object with a deletionTimestamp be removed now?); ``return_deleted_object`` decides
         what a DELETE answers.
reading: ``printer`` (table columns), ``field_labels`` (the field selectors the kind accepts),
         ``prune`` (the unknown fields a body loses), ``expires`` (an Event's TTL).

:class:`Strategy` is the plain behaviour (a ConfigMap's, a Lease's, a custom resource's
without a schema): every method is a no-op or the generic rule, and a kind overrides only what
kube's strategy for it does differently. A strategy holds no state and is shared by every store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pycm.sim import scale, shape, validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj, copy_value, deep_copy
from pycm.sim.pruning import prune_unknown_fields
from pycm.sim.tables import DEFAULT_PRINTER, PRINTERS, Printer

if TYPE_CHECKING:
    from pycm.sim.gc import DeleteOptions
    from pycm.sim.resources import Resource
    from pycm.sim.store import Store

__all__ = ["Strategy", "keep_status", "spec_changed", "take_status"]


def spec_changed(new: Obj, old: Obj) -> bool:
    return new.get("spec") != old.get("spec")


def keep_status(new: Obj, old: Obj) -> None:
    """``new`` gets ``old``'s status (kube resets a status sent to the main resource)."""
    if "status" in old:
        new["status"] = copy_value(old["status"])
    else:
        new.pop("status", None)


def take_status(new: Obj, old: Obj) -> None:
    """``new`` (what was sent to ``/status``) becomes ``old`` with only the sent status."""
    sent = new.get("status")
    had = "status" in new
    new.clear()
    new.update(deep_copy(old))
    if had:
        new["status"] = copy_value(sent)
    else:
        new.pop("status", None)


class Strategy:
    """A kind's behaviour (see the module docstring); subclassed per kind."""

    # Does the kind have a status subresource? (Must agree with its Resource's subresources.)
    status_subresource: bool = False
    # Does a spec change bump metadata.generation (set to 1 on create)?
    generation_on_spec: bool = False
    # Field selectors the kind accepts beyond metadata.name and metadata.namespace.
    field_labels: tuple[str, ...] = ()
    # Does a DELETE that removes the object answer with it (kube's ReturnDeletedObject), not
    # with a Status?
    return_deleted_object: bool = False
    # Do objects expire the store's event_ttl after their last write (kube's --event-ttl)?
    expires: bool = False

    def __init__(self, kind: str, printer: Printer | None = None) -> None:
        self.kind = kind
        self.printer = printer or PRINTERS.get(kind, DEFAULT_PRINTER)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind!r})"

    # ---------------------------------------------------------------- decoding

    def check_shape(self, obj: Any) -> None:
        """400 if a field has a JSON type the kind's Go type cannot hold."""
        shape.check_shape(self.kind, obj)

    def prune(
        self, version: str, body: dict[str, Any], field_validation: str | None, patch: Any = None
    ) -> list[str]:
        """Drop the fields the kind does not declare (see :mod:`pycm.sim.pruning`)."""
        return prune_unknown_fields(self.kind, version, body, field_validation, patch)

    # ---------------------------------------------------------------- writing

    def decode(self, obj: Obj) -> None:
        """Turn a sent object (a copy) into its stored form, as kube's conversion from the
        sent version does (a Secret's ``stringData`` merged into ``data``)."""

    def default(self, obj: Obj) -> None:
        """Fill the kind's defaults in place (kube's SetDefaults_*, run at decoding)."""

    def prepare_for_create(self, obj: Obj) -> None:
        """Normalize a new object (kube's PrepareForCreate: most kinds reset their status)."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Normalize ``new`` (a copy of what was sent) against ``old`` (the stored object)."""
        if self.status_subresource:
            keep_status(new, old)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """``new`` (a copy of what was sent to ``/status``) keeps only its status."""
        take_status(new, old)

    def validate(self, obj: Obj) -> list[Cause]:
        """Every cause the object is invalid for (kube's Validate)."""
        return validation.metadata_causes(obj, name_is_label=False)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        """Every cause the update is invalid for (kube's ValidateUpdate)."""
        return self.validate(new)

    def generation_changed(self, new: Obj, old: Obj) -> bool:
        """Does this update bump metadata.generation?"""
        return self.generation_on_spec and spec_changed(new, old)

    def committed(self, store: Store, res: Resource, event_type: str, obj: Obj) -> None:
        """After a write of ``obj`` was stored and its watch event sent (a CRD's controller
        serves its resource here)."""

    # ---------------------------------------------------------------- scale subresource

    def scale_of(self, obj: Obj) -> Obj:
        """The object's ``autoscaling/v1 Scale`` (replicas at ``spec.replicas``)."""
        return scale.scale_of(obj)

    def set_replicas(self, obj: Obj, replicas: int) -> None:
        """Write a Scale's replicas into ``obj`` (a copy of the stored object)."""
        obj.setdefault("spec", {})["replicas"] = replicas

    # ---------------------------------------------------------------- deleting

    def delete(
        self, store: Store, res: Resource, obj: Obj, options: DeleteOptions
    ) -> tuple[Obj, bool] | None:
        """Take a deletion over (after preconditions and orphaning); None: the generic one."""
        return None

    def grace_period(self, obj: Obj, options: DeleteOptions) -> int:
        """Seconds the object stays after a DELETE for a kubelet to confirm (0: none)."""
        return 0

    def deletion_finished(self, obj: Obj) -> bool:
        """May ``obj``, which has a deletionTimestamp, be removed now?"""
        return not obj["metadata"].get("finalizers")
