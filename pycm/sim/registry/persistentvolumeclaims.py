"""core/v1 PersistentVolumeClaim (kube's ``pkg/registry/core/persistentvolumeclaim``,
``ValidatePersistentVolumeClaim``).

Defaults: ``volumeMode: Filesystem``; a create resets the status to ``phase: Pending`` (no
volume controller binds claims here, so they stay Pending). Validation: at least one access
mode, each one kube knows (``ReadWriteOncePod`` alone); ``resources.requests.storage``
required and positive; the storage class a DNS subdomain; the volume mode ``Block`` or
``Filesystem``. Quantities that do not parse are a 400 from decoding, as in kube. The spec is
immutable except ``volumeName`` while unset (and, for a bound claim, the requests).
"""

from __future__ import annotations

from typing import Any

from pycm.sim import errors, shape, validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.quantity import parse_quantity
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import Printer, age, col, name_of, spec_of, status_of

__all__ = ["STRATEGY", "ClaimStrategy", "claim_spec_causes"]

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_SHORT_MODES = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}
VOLUME_MODES = ("Block", "Filesystem")


def _quantities(obj: Any) -> list[Any]:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    resources = spec.get("resources") if isinstance(spec, dict) else None
    if not isinstance(resources, dict):
        return []
    out = []
    for section in ("requests", "limits"):
        values = resources.get(section)
        if isinstance(values, dict):
            out += [v for v in values.values() if v is not None]
    return out


def claim_spec_causes(spec: Any, path: str) -> list[Cause]:
    """kube's ValidatePersistentVolumeClaimSpec (a claim's, or a claim template's)."""
    if not isinstance(spec, dict):
        return [validation.required(f"{path}.accessModes")]
    causes: list[Cause] = []
    modes = spec.get("accessModes") or []
    if not modes:
        causes.append(
            {
                "reason": "FieldValueRequired",
                "message": "Required value: at least 1 access mode is required",
                "field": f"{path}.accessModes",
            }
        )
    for mode in modes:
        if mode not in ACCESS_MODES:
            causes.append(validation.not_supported(f"{path}.accessModes", mode, ACCESS_MODES))
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        causes.append(
            validation.forbidden(
                f"{path}.accessModes", "may not use ReadWriteOncePod with other access modes"
            )
        )
    requests = (spec.get("resources") or {}).get("requests") or {}
    storage = requests.get("storage") if isinstance(requests, dict) else None
    field = f"{path}.resources[storage]"  # (kube's path: a key of resources, not of requests)
    if storage is None:
        causes.append(validation.required(field))
    elif parse_quantity(str(storage)) <= 0:
        causes.append(validation.invalid_value(field, str(storage), "must be greater than zero"))
    storage_class = spec.get("storageClassName")
    if storage_class:
        causes += validation.dns_subdomain_causes(f"{path}.storageClassName", str(storage_class))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        causes.append(validation.not_supported(f"{path}.volumeMode", mode, VOLUME_MODES))
    return causes


def _cells(obj: Obj, now: float) -> list[Any]:
    spec, status = spec_of(obj), status_of(obj)
    capacity = modes = ""
    if spec.get("volumeName"):
        capacity = str((status.get("capacity") or {}).get("storage") or "")
        modes = ",".join(_SHORT_MODES.get(m, m) for m in status.get("accessModes") or [])
    return [
        name_of(obj),
        status.get("phase") or "",
        spec.get("volumeName") or "",
        capacity,
        modes,
        spec.get("storageClassName") or "",
        age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


class ClaimStrategy(Strategy):
    status_subresource = True

    def check_shape(self, obj: Any) -> None:
        shape.check_shape(self.kind, obj)
        for value in _quantities(obj):
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise errors.bad_request(
                    f'{self.kind} in version "v1" cannot be handled as a {self.kind}: '
                    "quantities must be a string or a number"
                )
            try:
                parse_quantity(str(value))
            except ValueError as err:
                raise errors.bad_request(
                    f'{self.kind} in version "v1" cannot be handled as a {self.kind}: {err}'
                ) from None

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and not spec.get("volumeMode"):
            spec["volumeMode"] = "Filesystem"

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Pending"}

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + claim_spec_causes(obj.get("spec"), "spec")

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        new_spec = dict(new.get("spec") or {})
        old_spec = dict(old.get("spec") or {})
        if not old_spec.get("volumeName"):
            new_spec.pop("volumeName", None)
            old_spec.pop("volumeName", None)
        if (old.get("status") or {}).get("phase") == "Bound":
            for spec in (new_spec, old_spec):
                resources = dict(spec.get("resources") or {})
                resources.pop("requests", None)
                spec["resources"] = resources
        if new_spec != old_spec:
            causes.append(
                validation.forbidden(
                    "spec",
                    "spec is immutable after creation except resources.requests and "
                    "volumeAttributesClassName for bound claims",
                )
            )
        return causes


STRATEGY = ClaimStrategy(
    "PersistentVolumeClaim",
    Printer(
        [
            col("Name", fmt="name"),
            col("Status"),
            col("Volume"),
            col("Capacity"),
            col("Access Modes"),
            col("StorageClass"),
            col("Age"),
            col("VolumeMode", priority=1),
        ],
        _cells,
    ),
)
