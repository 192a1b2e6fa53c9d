"""What kube-apiserver validates for the emulator's core kinds, as ``details.causes``.

Each validator returns every cause (never only the first); each kind's strategy
(:mod:`pycm.sim.registry`) composes them, and the store turns a non-empty list into a 422
Invalid. The cause builders (``required``, ``invalid_value``, …) word causes as kube's
``field.ErrorList`` does; the kinds added for operators keep their rules in their own registry
modules. Covered: object names (DNS-1123 labels for namespaces, subdomains for the
rest), label keys and values, apps/v1 selectors (required, non-empty, matching the template's
labels, immutable on update), non-negative replicas and the few numeric fields kube bounds,
Lease durations. Pod specs (a Pod's and every template's): :mod:`pycm.sim.podspec_validation`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pycm.sim.errors import Cause
from pycm.sim.selectors import (
    label_value_errors,
    match_label_selector_object,
    qualified_name_errors,
)

__all__ = [
    "configmap_causes",
    "dns_label_causes",
    "dns_subdomain_causes",
    "duplicate",
    "event_causes",
    "forbidden",
    "immutable",
    "int_or_percent",
    "invalid_value",
    "label_selector_causes",
    "labels_causes",
    "lease_causes",
    "metadata_causes",
    "non_negative",
    "not_found",
    "not_supported",
    "path_segment_causes",
    "pod_spec_causes",
    "pod_update_causes",
    "port_name_causes",
    "required",
    "restart_policy_causes",
    "selector_template_causes",
    "selector_update_causes",
    "too_long",
    "too_many",
    "workload_spec_causes",
]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_PORT_NAME = re.compile(r"^[-a-z0-9]+$")
MAX_CONFIGMAP_BYTES = 1024 * 1024  # corev1.MaxSecretSize, which ConfigMaps share


def required(field: str) -> Cause:
    return {"reason": "FieldValueRequired", "message": "Required value", "field": field}


def invalid_value(field: str, value: Any, why: str) -> Cause:
    return invalid_shown(field, f'"{value}"' if isinstance(value, str) else str(value), why)


def invalid_shown(field: str, shown: str, why: str) -> Cause:
    """An invalid value as kube prints it already (``shown``: Go's %#v of a slice, a struct)."""
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: {why}",
        "field": field,
    }


def duplicate(field: str, value: Any) -> Cause:
    return {
        "reason": "FieldValueDuplicate",
        "message": f'Duplicate value: "{value}"',
        "field": field,
    }


def not_supported(field: str, value: Any, supported: Sequence[str]) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {shown}: supported values: "
        + ", ".join(f'"{v}"' for v in supported),
        "field": field,
    }


def forbidden(field: str, why: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {why}", "field": field}


def too_long(field: str, limit: int) -> Cause:
    return {
        "reason": "FieldValueTooLong",
        "message": f"Too long: may not be more than {limit} bytes",
        "field": field,
    }


def too_many(field: str, count: int, limit: int) -> Cause:
    return {
        "reason": "FieldValueTooMany",
        "message": f"Too many: {count}: must have at most {limit} items",
        "field": field,
    }


def immutable(field: str, new: Any, old: Any) -> list[Cause]:
    """kube's ValidateImmutableField: "field is immutable" when ``new`` differs from ``old``."""
    if new == old:
        return []
    return [
        invalid_value(field, new if isinstance(new, (str, int)) else str(new), "field is immutable")
    ]


def dns_label_causes(field: str, value: str) -> list[Cause]:
    causes = []
    if len(value) > 63:
        causes.append(invalid_value(field, value, "must be no more than 63 characters"))
    if not _DNS_LABEL.match(value):
        causes.append(
            invalid_value(
                field,
                value,
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
                "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            )
        )
    return causes


def dns_subdomain_causes(field: str, value: str) -> list[Cause]:
    causes = []
    if len(value) > 253:
        causes.append(invalid_value(field, value, "must be no more than 253 characters"))
    if not _DNS_SUBDOMAIN.match(value):
        causes.append(
            invalid_value(
                field,
                value,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            )
        )
    return causes


def labels_causes(field: str, labels: Any) -> list[Cause]:
    """kube's ``ValidateLabels``: each key a qualified name, each value a label value, every
    message apimachinery's own."""
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [invalid_value(field, str(labels), "must be a map of strings")]
    causes: list[Cause] = []
    for key, value in labels.items():
        causes += [invalid_value(field, str(key), why) for why in qualified_name_errors(str(key))]
        if not isinstance(value, str):
            causes.append(invalid_value(field, str(value), "must be a string"))
        else:
            causes += [invalid_value(field, value, why) for why in label_value_errors(value)]
    return causes


def label_selector_causes(field: str, selector: Any) -> list[Cause]:
    """kube's ``ValidateLabelSelector``: matchLabels as labels, each requirement's operator,
    values and key."""
    if not isinstance(selector, Mapping):
        return []
    causes = labels_causes(f"{field}.matchLabels", selector.get("matchLabels"))
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        if not isinstance(expr, Mapping):
            continue
        where = f"{field}.matchExpressions[{i}]"
        values = expr.get("values") or []
        causes += requirement_causes(where, expr, values)
        for j, value in enumerate(values):
            causes += [
                invalid_value(f"{where}.values[{j}]", str(value), why)
                for why in label_value_errors(str(value))
            ]
    return causes


def requirement_causes(
    where: str, req: Mapping[str, Any], values: Any, *, node: bool = False
) -> list[Cause]:
    """A selector requirement's operator against its values, then its key, as kube's
    ValidateLabelSelectorRequirement (``node``: ValidateNodeSelectorRequirement, which also
    takes ``Gt``/``Lt`` with one value); the values' own format is the caller's."""
    causes: list[Cause] = []
    operator = req.get("operator")
    if operator in ("In", "NotIn"):
        if not values:
            why = "must be specified when `operator` is 'In' or 'NotIn'"
            causes.append({**required(f"{where}.values"), "message": f"Required value: {why}"})
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            why = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            causes.append(forbidden(f"{where}.values", why))
    elif node and operator in ("Gt", "Lt"):
        if len(values) != 1:
            why = "must be specified single value when `operator` is 'Lt' or 'Gt'"
            causes.append({**required(f"{where}.values"), "message": f"Required value: {why}"})
    else:
        why = "not a valid selector operator"
        causes.append(invalid_value(f"{where}.operator", str(operator or ""), why))
    key = str(req.get("key") or "")
    causes += [invalid_value(f"{where}.key", key, why) for why in qualified_name_errors(key)]
    return causes


def port_name_causes(field: str, name: str) -> list[Cause]:
    """kube's IsValidPortName (an IANA service name)."""
    why = []
    if len(name) > 15:
        why.append("must be no more than 15 characters")
    if not _PORT_NAME.match(name):
        why.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in name):
        why.append("must contain at least one letter (a-z)")
    if "--" in name:
        why.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        why.append("must not begin or end with a hyphen")
    return [invalid_value(field, name, w) for w in why]


def path_segment_causes(field: str, value: str) -> list[Cause]:
    """kube's ``path.IsValidPathSegmentName``: the names RBAC objects may have
    (``system:controller:foo`` is one)."""
    if value in (".", ".."):
        return [invalid_value(field, value, f"may not be '{value}'")]
    return [invalid_value(field, value, f"may not contain '{c}'") for c in "/%" if c in value]


def metadata_causes(
    obj: Mapping[str, Any],
    name_is_label: bool,
    name_causes: Callable[[str, str], list[Cause]] | None = None,
) -> list[Cause]:
    """The metadata's causes; the name a DNS-1123 label or subdomain, or as ``name_causes``
    (field, name) says."""
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    name = meta.get("name")
    if not name:
        causes.append(required("metadata.name"))
    elif not isinstance(name, str):
        causes.append(invalid_value("metadata.name", str(name), "must be a string"))
    elif name_causes is not None:
        causes += name_causes("metadata.name", name)
    elif name_is_label:
        causes += dns_label_causes("metadata.name", name)
    else:
        causes += dns_subdomain_causes("metadata.name", name)
    causes += labels_causes("metadata.labels", meta.get("labels"))
    annotations = meta.get("annotations")
    if annotations is not None and not isinstance(annotations, Mapping):
        causes.append(invalid_value("metadata.annotations", str(annotations), "must be a map"))
    return causes


def not_found(field: str, value: Any) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    return {"reason": "FieldValueNotFound", "message": f"Not found: {shown}", "field": field}


def pod_spec_causes(field: str, spec: Any, claim_volumes: Sequence[str] = ()) -> list[Cause]:
    """A pod spec's causes: :func:`pycm.sim.podspec_validation.pod_spec_causes` (imported here,
    where the kinds' strategies look for validators; that module builds on this one's)."""
    from pycm.sim import podspec_validation

    return podspec_validation.pod_spec_causes(field, spec, claim_volumes)


def non_negative(field: str, value: Any) -> list[Cause]:
    if value is None:
        return []
    if not isinstance(value, int) or isinstance(value, bool):
        return [invalid_value(field, str(value), "must be an integer")]
    if value < 0:
        return [invalid_value(field, value, "must be greater than or equal to 0")]
    return []


def selector_template_causes(
    spec: Mapping[str, Any],
    path: str,
    noun: str,
    *,
    template_path: str = "",
    claim_volumes: Sequence[str] = (),
) -> list[Cause]:
    """A controller's ``selector`` (required, not empty, a valid selector) and its pod
    ``template`` (required, labels the selector matches, a valid pod spec) under ``path``;
    ``noun`` words the empty-selector message ("empty selector is invalid for statefulset")."""
    causes: list[Cause] = []
    selector = spec.get("selector")
    template = spec.get("template")
    tpath = template_path or f"{path}.template"
    if selector is None:
        causes.append(required(f"{path}.selector"))
    elif not isinstance(selector, Mapping) or not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        causes.append(
            invalid_value(f"{path}.selector", "{}", f"empty selector is invalid for {noun}")
        )
    if not isinstance(template, Mapping):
        causes.append(required(tpath))
        return causes
    labels = (template.get("metadata") or {}).get("labels") or {}
    causes += labels_causes(f"{tpath}.metadata.labels", labels)
    if isinstance(selector, Mapping) and (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        try:
            matches = match_label_selector_object(selector).matches(labels)
        except Exception:  # an unknown operator is a validation error, not a crash
            matches = False
            causes.append(invalid_value(f"{path}.selector", str(selector), "invalid selector"))
        if not matches:
            causes.append(
                invalid_value(
                    f"{tpath}.metadata.labels",
                    ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
                    "`selector` does not match template `labels`",
                )
            )
    causes += pod_spec_causes(f"{tpath}.spec", template.get("spec"), claim_volumes)
    return causes


def restart_policy_causes(template: Any, tpath: str, allowed: Sequence[str]) -> list[Cause]:
    """A controller's pod template may only use ``allowed`` restart policies."""
    spec = (template.get("spec") or {}) if isinstance(template, Mapping) else {}
    policy = spec.get("restartPolicy") if isinstance(spec, Mapping) else None
    if policy not in allowed:
        return [not_supported(f"{tpath}.spec.restartPolicy", policy or "", allowed)]
    return []


def workload_spec_causes(obj: Mapping[str, Any], deployment: bool) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return [required("spec.selector"), required("spec.template")]
    causes = non_negative("spec.replicas", spec.get("replicas"))
    causes += non_negative("spec.minReadySeconds", spec.get("minReadySeconds"))
    selector = spec.get("selector")
    template = spec.get("template")
    if not selector:
        causes.append(required("spec.selector"))
    elif not (selector.get("matchLabels") or selector.get("matchExpressions")):
        causes.append(
            invalid_value(
                "spec.selector",
                "{}",
                "empty selector is invalid for deployment"
                if deployment
                else "empty selector is invalid for replicaset",
            )
        )
    if not isinstance(template, Mapping):
        causes.append(required("spec.template"))
        return causes
    labels = (template.get("metadata") or {}).get("labels") or {}
    causes += labels_causes("spec.template.metadata.labels", labels)
    if selector and (selector.get("matchLabels") or selector.get("matchExpressions")):
        try:
            matches = match_label_selector_object(selector).matches(labels)
        except Exception:  # an unknown operator is a validation error, not a crash
            matches = False
            causes.append(invalid_value("spec.selector", str(selector), "invalid selector"))
        if not matches:
            causes.append(
                invalid_value(
                    "spec.template.metadata.labels",
                    ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
                    "`selector` does not match template `labels`",
                )
            )
    causes += pod_spec_causes("spec.template.spec", template.get("spec"))
    if deployment:
        causes += non_negative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
        strategy = spec.get("strategy") or {}
        stype = strategy.get("type")
        if stype is not None and stype not in ("RollingUpdate", "Recreate"):
            causes.append(
                {
                    "reason": "FieldValueNotSupported",
                    "message": f'Unsupported value: "{stype}": supported values: '
                    '"Recreate", "RollingUpdate"',
                    "field": "spec.strategy.type",
                }
            )
        causes += _rolling_update_causes(stype, strategy.get("rollingUpdate"))
        deadline = spec.get("progressDeadlineSeconds")
        if isinstance(deadline, int) and deadline <= int(spec.get("minReadySeconds") or 0):
            causes.append(
                invalid_value(
                    "spec.progressDeadlineSeconds",
                    deadline,
                    "must be greater than minReadySeconds",
                )
            )
    return causes


def int_or_percent(field: str, value: Any) -> tuple[list[Cause], float | None]:
    """Causes for an IntOrString, and its size (percent as a fraction of 100) when valid."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            return [invalid_value(field, value, "must be greater than or equal to 0")], None
        return [], float(value)
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return [], float(value[:-1])
    return [
        invalid_value(
            field,
            str(value),
            "a valid percent string must be a numeric string "
            "followed by an ending '%' (e.g. '1%',  or '93%')",
        )
    ], None


def _rolling_update_causes(stype: Any, rolling: Any) -> list[Cause]:
    field = "spec.strategy.rollingUpdate"
    if rolling is None:
        return []
    if stype == "Recreate":
        return [
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: may not be specified when strategy `type` is 'Recreate'",
                "field": field,
            }
        ]
    if not isinstance(rolling, Mapping):
        return [invalid_value(field, str(rolling), "must be an object")]
    causes: list[Cause] = []
    sizes = {}
    for key in ("maxUnavailable", "maxSurge"):
        if rolling.get(key) is not None:
            more, size = int_or_percent(f"{field}.{key}", rolling[key])
            causes += more
            sizes[key] = size
    unavailable = rolling.get("maxUnavailable")
    if isinstance(unavailable, str) and (sizes.get("maxUnavailable") or 0) > 100:
        causes.append(
            invalid_value(f"{field}.maxUnavailable", unavailable, "must not be greater than 100%")
        )
    if sizes.get("maxUnavailable") == 0 and sizes.get("maxSurge") == 0:
        causes.append(
            invalid_value(
                f"{field}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"
            )
        )
    return causes


def lease_causes(obj: Mapping[str, Any]) -> list[Cause]:
    """kube's ValidateLeaseSpec: a positive duration, non-negative transitions, a known
    ``strategy``, and a ``preferredHolder`` only beside a strategy (KEP-4355)."""
    from pycm.sim.registry.leasecandidates import strategy_causes

    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        causes.append(
            invalid_value("spec.leaseDurationSeconds", duration, "must be greater than 0")
        )
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        causes.append(
            invalid_value(
                "spec.leaseTransitions", transitions, "must be greater than or equal to 0"
            )
        )
    strategy = spec.get("strategy")
    if isinstance(strategy, str):
        causes += strategy_causes(strategy, "spec.strategy")
    if spec.get("preferredHolder") and not strategy:
        causes.append(
            forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined")
        )
    return causes


def configmap_causes(obj: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for section in ("data", "binaryData"):
        for key in obj.get(section) or {}:
            if not _CONFIG_KEY.match(str(key)) or len(str(key)) > 253:
                causes.append(
                    invalid_value(
                        f"{section}",
                        key,
                        "a valid config key must consist of alphanumeric characters, '-', '_' "
                        "or '.'",
                    )
                )
    # kube's ValidateConfigMap: the data, and binaryData's decoded bytes, at most 1 MiB.
    size = sum(len(str(v).encode()) for v in (obj.get("data") or {}).values())
    size += sum(len(str(v)) * 3 // 4 for v in (obj.get("binaryData") or {}).values())
    if size > MAX_CONFIGMAP_BYTES:
        causes.append(
            {
                "reason": "FieldValueTooLong",
                "message": f"Too long: may not be more than {MAX_CONFIGMAP_BYTES} bytes",
                "field": "[]",
            }
        )
    return causes


def event_causes(obj: Mapping[str, Any]) -> list[Cause]:
    involved = obj.get("involvedObject") or {}
    namespace = (obj.get("metadata") or {}).get("namespace", "")
    ns = involved.get("namespace")
    if ns and namespace and ns != namespace:
        return [invalid_value("involvedObject.namespace", ns, "does not match event.namespace")]
    return []


def selector_update_causes(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """apps/v1: ``spec.selector`` is immutable."""
    old_selector = (old.get("spec") or {}).get("selector")
    new_selector = (new.get("spec") or {}).get("selector")
    if old_selector != new_selector:
        return [invalid_value("spec.selector", str(new_selector), "field is immutable")]
    return []


def pod_update_causes(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """What a pod update may not change (its node once bound, its containers)."""
    causes: list[Cause] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    for field in ("nodeName",):
        if old_spec.get(field) and old_spec.get(field) != new_spec.get(field):
            causes.append(invalid_value(f"spec.{field}", new_spec.get(field), "field is immutable"))
    if [c.get("name") for c in old_spec.get("containers") or []] != [
        c.get("name") for c in new_spec.get("containers") or []
    ]:
        causes.append(
            invalid_value(
                "spec",
                "...",
                "Forbidden: pod updates may not change fields other than images and a few others",
            )
        )
    return causes
