"""A CustomResourceDefinition object itself: its defaults and its validation, as kube's
``apiextensions.k8s.io/v1`` defaulting and ``ValidateCustomResourceDefinition`` have them.

Defaults: ``names.singular`` the lower-cased kind, ``names.listKind`` kind + ``List``,
``conversion.strategy`` None, each version's ``subresources``/``additionalPrinterColumns`` kept
as given and printer columns' ``priority`` 0. Validation (every cause, kube's words and paths):
``metadata.name`` must be ``<plural>.<group>``; a group with a dot; names that are DNS-1035
labels (kind and listKind may have mixed case) and distinct; scope Namespaced or Cluster;
versions with unique DNS-1035 names, exactly one ``storage: true``, each with an
``openAPIV3Schema`` (:mod:`pycm.sim.crd.structural`); scale paths under ``.spec``/``.status``;
printer columns with a name, a supported type and format and a simple JSON path. Beyond kube:
``conversion.strategy: Webhook`` is refused (the emulator runs no webhooks), and
``spec.preserveUnknownFields: true`` as v1 refuses it. On update, ``spec.scope`` and
``spec.names.kind`` / ``plural`` of a stored version are immutable once Established, and no
stored version may be removed while ``status.storedVersions`` names it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pycm.sim.crd import causes as fe
from pycm.sim.crd.jsonpath import JSONPathError, parse_json_path
from pycm.sim.crd.structural import validate_openapi_schema
from pycm.sim.errors import Cause

__all__ = ["apply_crd_defaults", "validate_crd", "validate_crd_update"]

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1123_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
_SIMPLE_JSON_PATH = re.compile(r"^(\.[A-Za-z0-9_-]+|\[\d+\]|\['[^']*'\])+$")


def apply_crd_defaults(crd: dict[str, Any]) -> None:
    """Default a CRD in place (v1's ``SetDefaults_CustomResourceDefinition`` and friends)."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    conversion = spec.setdefault("conversion", {})
    if isinstance(conversion, dict):
        conversion.setdefault("strategy", "None")
    for version in spec.get("versions") or []:
        if not isinstance(version, dict):
            continue
        for column in version.get("additionalPrinterColumns") or []:
            if isinstance(column, dict):
                column.setdefault("priority", 0)


def _names_causes(names: Any) -> list[Cause]:
    path = "spec.names"
    if not isinstance(names, Mapping):
        return [fe.required(path)]
    out: list[Cause] = []
    for name, mixed in (("plural", False), ("singular", False), ("kind", True), ("listKind", True)):
        value = names.get(name)
        if not value:
            if name in ("plural", "kind", "listKind"):
                out.append(fe.required(f"{path}.{name}"))
            continue
        out += fe.dns1035(f"{path}.{name}", value, mixed)
    for field in ("shortNames", "categories"):
        values = names.get(field) or []
        if not isinstance(values, list):
            out.append(fe.invalid(f"{path}.{field}", str(values), "must be a list of strings"))
            continue
        for i, value in enumerate(values):
            out += fe.dns1035(f"{path}.{field}[{i}]", value)
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        why = "kind and listKind may not be the same or parsing become ambiguous"
        out.append(fe.invalid(f"{path}.listKind", names["listKind"], why))
    return out


def _scale_causes(scale: Any, path: str) -> list[Cause]:
    if not isinstance(scale, Mapping):
        return []
    out: list[Cause] = []
    spec_path = scale.get("specReplicasPath")
    if not spec_path:
        out.append(fe.required(f"{path}.specReplicasPath"))
    elif not (
        isinstance(spec_path, str)
        and spec_path.startswith(".spec.")
        and _SIMPLE_JSON_PATH.match(spec_path)
    ):
        out.append(
            fe.invalid(f"{path}.specReplicasPath", spec_path, "should be a json path under .spec")
        )
    status_path = scale.get("statusReplicasPath")
    if not status_path:
        out.append(fe.required(f"{path}.statusReplicasPath"))
    elif not (
        isinstance(status_path, str)
        and status_path.startswith(".status.")
        and _SIMPLE_JSON_PATH.match(status_path)
    ):
        out.append(
            fe.invalid(
                f"{path}.statusReplicasPath", status_path, "should be a json path under .status"
            )
        )
    selector = scale.get("labelSelectorPath")
    if selector and not (
        isinstance(selector, str)
        and selector.startswith((".spec.", ".status."))
        and _SIMPLE_JSON_PATH.match(selector)
    ):
        why = "should be a json path under either .spec or .status"
        out.append(fe.invalid(f"{path}.labelSelectorPath", selector, why))
    return out


def _columns_causes(columns: Any, path: str) -> list[Cause]:
    if not isinstance(columns, list):
        return [] if columns is None else [fe.invalid(path, str(columns), "must be a list")]
    out: list[Cause] = []
    for i, column in enumerate(columns):
        where = f"{path}[{i}]"
        if not isinstance(column, Mapping):
            out.append(fe.invalid(where, str(column), "must be an object"))
            continue
        if not column.get("name"):
            out.append(fe.required(f"{where}.name"))
        ctype = column.get("type")
        if not ctype:
            out.append(fe.required(f"{where}.type"))
        elif ctype not in _COLUMN_TYPES:
            out.append(fe.not_supported(f"{where}.type", ctype, _COLUMN_TYPES))
        fmt = column.get("format")
        if fmt and fmt not in _COLUMN_FORMATS:
            out.append(fe.not_supported(f"{where}.format", fmt, _COLUMN_FORMATS))
        json_path = column.get("jsonPath")
        if not json_path:
            out.append(fe.required(f"{where}.jsonPath"))
        else:
            out += _json_path_causes(f"{where}.jsonPath", json_path)
        priority = column.get("priority", 0)
        if not isinstance(priority, int) or isinstance(priority, bool) or priority < 0:
            out.append(
                fe.invalid(f"{where}.priority", priority, "must be greater than or equal to 0")
            )
    return out


def _json_path_causes(path: str, value: Any) -> list[Cause]:
    if not isinstance(value, str) or not value.startswith("."):
        return [fe.invalid(path, str(value), "must be a simple json path starting with .")]
    try:
        parse_json_path(value)
    except JSONPathError as e:
        return [fe.invalid(path, value, f"must be a valid JSONPath: {e}")]
    return []


def _versions_causes(versions: Any) -> list[Cause]:
    path = "spec.versions"
    if not isinstance(versions, list) or not versions:
        return [fe.required(path, "must have exactly one version marked as storage version")]
    out: list[Cause] = []
    seen: set[str] = set()
    storage = 0
    for i, version in enumerate(versions):
        where = f"{path}[{i}]"
        if not isinstance(version, Mapping):
            out.append(fe.invalid(where, str(version), "must be an object"))
            continue
        name = version.get("name")
        if not name:
            out.append(fe.required(f"{where}.name"))
        else:
            out += fe.dns1035(f"{where}.name", name)
            if name in seen:
                out.append(fe.duplicate(f"{where}.name", name))
            seen.add(str(name))
        if version.get("storage") is True:
            storage += 1
        schema = (
            (version.get("schema") or {}).get("openAPIV3Schema")
            if isinstance(version.get("schema"), Mapping)
            else None
        )
        out += validate_openapi_schema(schema, f"{where}.schema.openAPIV3Schema")
        subresources = version.get("subresources")
        if isinstance(subresources, Mapping):
            out += _scale_causes(subresources.get("scale"), f"{where}.subresources.scale")
        out += _columns_causes(
            version.get("additionalPrinterColumns"), f"{where}.additionalPrinterColumns"
        )
    if storage != 1:
        shown = [v.get("name") for v in versions if isinstance(v, Mapping)]
        out.append(
            fe.invalid(path, shown, "must have exactly one version marked as storage version")
        )
    return out


_APPROVAL = "api-approved.kubernetes.io"


def _approval_causes(crd: Mapping[str, Any], group: Any) -> list[Cause]:
    """Groups under k8s.io and kubernetes.io are protected: kube wants the approval
    annotation (any value; "unapproved…" values are accepted with a condition kube sets)."""
    if not isinstance(group, str):
        return []
    protected = group in ("k8s.io", "kubernetes.io") or group.endswith(
        (".k8s.io", ".kubernetes.io")
    )
    annotations = (crd.get("metadata") or {}).get("annotations") or {}
    if not protected or _APPROVAL in annotations:
        return []
    why = (
        f'protected groups must have approval annotation "{_APPROVAL}", see '
        "https://github.com/kubernetes/enhancements/pull/1111"
    )
    return [fe.required(f"metadata.annotations[{_APPROVAL}]", why)]


def validate_crd(crd: Mapping[str, Any]) -> list[Cause]:
    """Every cause against a (defaulted) CRD on create."""
    out: list[Cause] = []
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        return [fe.required("spec")]
    group = spec.get("group")
    if not group:
        out.append(fe.required("spec.group"))
    elif not isinstance(group, str) or len(group) > 253 or not _DNS1123_SUBDOMAIN.match(group):
        out.append(fe.invalid("spec.group", str(group), _DNS1123_MSG))
    elif "." not in group:
        out.append(fe.invalid("spec.group", group, "should be a domain with at least one dot"))
    out += _approval_causes(crd, group)
    names = spec.get("names")
    plural = names.get("plural") if isinstance(names, Mapping) else None
    name = (crd.get("metadata") or {}).get("name")
    if plural and group and name != f"{plural}.{group}":
        out.append(
            fe.invalid("metadata.name", name or "", 'must be spec.names.plural+"."+spec.group')
        )
    out += _names_causes(names)
    scope = spec.get("scope")
    if not scope:
        out.append(fe.required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        out.append(fe.not_supported("spec.scope", scope, ("Cluster", "Namespaced")))
    out += _versions_causes(spec.get("versions"))
    strategy = (spec.get("conversion") or {}).get("strategy", "None")
    if strategy != "None":
        # kube supports Webhook; the emulator calls no webhooks, so it refuses rather than
        # serve versions it cannot convert.
        out.append(fe.not_supported("spec.conversion.strategy", strategy, ("None",)))
    if spec.get("preserveUnknownFields") is True:
        why = (
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
            "spec.versions[*].schema instead"
        )
        out.append(fe.invalid("spec.preserveUnknownFields", True, why))
    return out


def validate_crd_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """Every cause against a CRD update: those of a create, and what may not change."""
    out = validate_crd(new)
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if new_spec.get("group") != old_spec.get("group"):
        out.append(fe.invalid("spec.group", new_spec.get("group") or "", "field is immutable"))
    if new_spec.get("scope") != old_spec.get("scope"):
        out.append(fe.invalid("spec.scope", new_spec.get("scope") or "", "field is immutable"))
    stored = (old.get("status") or {}).get("storedVersions") or []
    names = {v.get("name") for v in new_spec.get("versions") or [] if isinstance(v, Mapping)}
    for i, version in enumerate(stored):
        if version not in names:
            why = "must appear in spec.versions"
            out.append(fe.invalid(f"status.storedVersions[{i}]", version, why))
    return out
