"""The strategy of a custom resource: apiextensions-apiserver's ``customResourceStrategy``.

One instance per served version of a CRD (it holds that version's compiled schema, printer
and scale paths; the store keeps every version's objects in one table):

- decoding: unknown fields pruned by the version's structural schema, reported as kube reports
  them (``Warning: unknown field "spec.x"``; 400 under ``fieldValidation=Strict``);
- ``default``: the schema's ``default:`` values; ``prepare_for_create`` drops a sent status when
  the version has a status subresource; updates keep it (and ``/status`` takes only it);
- ``validate``: metadata (a DNS-1123 subdomain name), then the schema (kube's causes,
  :mod:`pycm.sim.crd.validate_schema`);
- ``metadata.generation``: 1 on create, bumped by any change outside ``metadata`` (and outside
  ``status`` when the status subresource is on), as kube bumps it for custom resources;
- table: the version's ``additionalPrinterColumns`` (:mod:`pycm.sim.crd.printer`);
- scale: ``specReplicasPath`` / ``statusReplicasPath`` / ``labelSelectorPath``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from pycm.sim import errors, validation
from pycm.sim.crd.default import apply_defaults
from pycm.sim.crd.printer import printer_columns
from pycm.sim.crd.prune import prune
from pycm.sim.crd.schema import Schema, compile_schema
from pycm.sim.crd.validate_schema import validate_value
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.pruning import FIELD_VALIDATION
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import Printer

if TYPE_CHECKING:
    from pycm.sim.resources import Resource
    from pycm.sim.store import Store

__all__ = ["CustomResourceStrategy", "ScalePaths"]


@dataclass(frozen=True, slots=True)
class ScalePaths:
    """A version's scale subresource: where replicas live (dotted paths, ``.spec.replicas``)."""

    spec_replicas: str
    status_replicas: str
    label_selector: str = ""


def _split(path: str) -> list[str]:
    return [p for p in path.split(".") if p]


def _get(obj: Any, path: str) -> Any:
    for part in _split(path):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _set(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = _split(path)
    for part in parts[:-1]:
        child = obj.get(part)
        if not isinstance(child, dict):
            child = obj[part] = {}
        obj = child
    obj[parts[-1]] = value


class CustomResourceStrategy(Strategy):
    """A custom resource at one served version (see the module docstring)."""

    generation_on_spec = True

    def __init__(
        self,
        crd: Mapping[str, Any],
        version: Mapping[str, Any],
    ) -> None:
        spec = crd["spec"]
        names = spec["names"]
        columns, cells = printer_columns(version)
        super().__init__(str(names["kind"]), Printer(columns, cells))
        self.crd_name = str((crd.get("metadata") or {}).get("name") or "")
        self.crd_uid = str((crd.get("metadata") or {}).get("uid") or "")
        self.group = str(spec["group"])
        self.version = str(version["name"])
        self.plural = str(names["plural"])
        # The versions objects may be stored at (kube's status.storedVersions): an object
        # written before the storage version changed keeps its apiVersion until rewritten.
        stored = (crd.get("status") or {}).get("storedVersions") or []
        self.stored_api_versions = tuple(f"{self.group}/{v}" for v in stored if isinstance(v, str))
        self.namespaced = spec.get("scope") == "Namespaced"
        # Set while the CRD is being deleted and objects wait for their finalizers
        # (:mod:`pycm.sim.crd.cleanup`): creates are refused.
        self.terminating = False
        raw = (version.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
        self.raw_schema: dict[str, Any] = copy.deepcopy(dict(raw))
        self.schema: Schema = compile_schema(raw)
        subresources = version.get("subresources") or {}
        self.status_subresource = "status" in subresources
        scale = subresources.get("scale")
        self.scale: ScalePaths | None = None
        if isinstance(scale, Mapping):
            self.scale = ScalePaths(
                str(scale.get("specReplicasPath") or ""),
                str(scale.get("statusReplicasPath") or ""),
                str(scale.get("labelSelectorPath") or ""),
            )
        # What a change of the served definition is compared by (see the controller).
        self.fingerprint = orjson.dumps(
            {"crd": spec.get("scope"), "names": names, "version": version, "stored": stored},
            option=orjson.OPT_SORT_KEYS,
        )

    # ---------------------------------------------------------------- decoding

    def prune(
        self, version: str, body: dict[str, Any], field_validation: str | None, patch: Any = None
    ) -> list[str]:
        mode = field_validation or "Warn"
        if mode not in FIELD_VALIDATION:
            raise errors.bad_request(
                f'fieldValidation: Unsupported value: "{mode}": supported values: '
                + ", ".join(f'"{m}"' for m in FIELD_VALIDATION)
            )
        found = prune(body, self.schema)
        if not found or mode == "Ignore":
            return []
        if mode == "Strict":
            listed = ", ".join(f'unknown field "{path}"' for path in found)
            if patch is not None:
                shown = orjson.dumps(orjson.dumps(patch).decode()).decode()
                why = f"Invalid value: {shown}: strict decoding error: {listed}"
                cause = {"reason": "FieldValueInvalid", "message": why, "field": "patch"}
                raise errors.invalid("", "", [cause])
            raise errors.bad_request(
                f'{self.kind} in version "{version}" cannot be handled as a {self.kind}: '
                f"strict decoding error: {listed}"
            )
        return found

    # ---------------------------------------------------------------- writing

    def default(self, obj: Obj) -> None:
        apply_defaults(obj, self.schema)

    def prepare_for_create(self, obj: Obj) -> None:
        if self.terminating:
            raise errors.APIError(
                405,
                "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating",
                {"group": self.group, "kind": self.plural},
            )
        if self.status_subresource:
            obj.pop("status", None)

    def committed(self, store: Store, res: Resource, event_type: str, obj: Obj) -> None:
        if event_type == "DELETED" and self.terminating:
            from pycm.sim.crd.cleanup import instance_removed

            instance_removed(store, self)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + validate_value(obj, self.schema)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(new)

    def generation_changed(self, new: Obj, old: Obj) -> bool:
        skip = ("metadata", "status") if self.status_subresource else ("metadata",)
        return {k: v for k, v in new.items() if k not in skip} != {
            k: v for k, v in old.items() if k not in skip
        }

    # ---------------------------------------------------------------- scale

    def scale_of(self, obj: Obj) -> Obj:
        """The object's ``autoscaling/v1 Scale`` by the version's scale paths."""
        paths = self.scale or ScalePaths(".spec.replicas", ".status.replicas")
        m = obj.get("metadata") or {}
        spec_replicas = _get(obj, paths.spec_replicas)
        status_replicas = _get(obj, paths.status_replicas)
        selector = _get(obj, paths.label_selector) if paths.label_selector else None
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: m[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in m
            },
            "spec": {"replicas": spec_replicas if isinstance(spec_replicas, int) else 0},
            "status": {
                "replicas": status_replicas if isinstance(status_replicas, int) else 0,
                "selector": selector if isinstance(selector, str) else "",
            },
        }

    def set_replicas(self, obj: Obj, replicas: int) -> None:
        """Write a Scale's replicas at ``specReplicasPath``."""
        paths = self.scale or ScalePaths(".spec.replicas", ".status.replicas")
        _set(obj, paths.spec_replicas, replicas)
