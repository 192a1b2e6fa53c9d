"""networking.k8s.io/v1 Ingress (kube's ``pkg/registry/networking/ingress``,
``ValidateIngress``).

No defaults in v1 (a path's ``pathType`` is required). Validation: a default backend or rules;
each rule's host a DNS subdomain (a leading ``*.`` wildcard allowed, an IP address refused);
HTTP paths present, their ``pathType`` one of ``Exact``, ``ImplementationSpecific``,
``Prefix``, their path absolute without ``//``, ``/./``, ``/../``, ``%2f`` or a trailing
``/.``/``/..`` (Exact and Prefix); each backend exactly one of a service (a DNS-1035 name, a
port name or number 1-65535, not both) or a resource; the class name a DNS subdomain. A create
resets the status to ``loadBalancer: {}``; a spec change bumps the generation. No ingress
controller routes anything.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from pycm.sim import validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import Printer, age, col, name_of, spec_of, status_of

__all__ = ["STRATEGY", "IngressStrategy", "dns1035_label_causes"]

PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
_BAD_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_BAD_SUFFIXES = ("/..", "/.")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_WILDCARD = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
    "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
    "alphanumeric character (e.g. '*.example.com', regex used for validation is "
    "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def dns1035_label_causes(field: str, value: str) -> list[Cause]:
    causes = []
    if len(value) > 63:
        causes.append(validation.invalid_value(field, value, "must be no more than 63 characters"))
    if not _DNS1035.match(value):
        causes.append(
            validation.invalid_value(
                field,
                value,
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')",
            )
        )
    return causes


def _backend_causes(backend: Any, path: str) -> list[Cause]:
    if not isinstance(backend, dict):
        return [validation.invalid_value(path, "", "resource or service backend is required")]
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [validation.invalid_value(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        if not isinstance(resource, dict) or not resource.get("kind"):
            return [validation.required(f"{path}.resource.kind")]
        return [] if resource.get("name") else [validation.required(f"{path}.resource.name")]
    if not isinstance(service, dict):
        return [validation.invalid_value(path, "", "resource or service backend is required")]
    causes = dns1035_label_causes(f"{path}.service.name", str(service.get("name") or ""))
    port = service.get("port") or {}
    name, number = port.get("name") or "", port.get("number") or 0
    if name and number:
        causes.append(validation.invalid_value(path, "", "cannot set both port name & port number"))
    elif name:
        causes += validation.port_name_causes(f"{path}.service.port.name", str(name))
    elif number:
        if not isinstance(number, int) or not 1 <= number <= 65535:
            causes.append(
                validation.invalid_value(
                    f"{path}.service.port.number", number, "must be between 1 and 65535, inclusive"
                )
            )
    else:
        causes.append(
            {
                "reason": "FieldValueRequired",
                "message": "Required value: port name or number is required",
                "field": path,
            }
        )
    return causes


def _path_causes(item: Any, path: str) -> list[Cause]:
    if not isinstance(item, dict):
        return [validation.required(f"{path}.pathType")]
    kind, value = item.get("pathType"), item.get("path") or ""
    if kind is None:
        return [
            {
                "reason": "FieldValueRequired",
                "message": "Required value: pathType must be specified",
                "field": f"{path}.pathType",
            }
        ]
    causes: list[Cause] = []
    if kind in ("Exact", "Prefix"):
        if not str(value).startswith("/"):
            causes.append(
                validation.invalid_value(f"{path}.path", value, "must be an absolute path")
            )
        for seq in _BAD_SEQUENCES:
            if seq in str(value):
                causes.append(
                    validation.invalid_value(f"{path}.path", value, f"must not contain '{seq}'")
                )
        for suffix in _BAD_SUFFIXES:
            if str(value).endswith(suffix):
                causes.append(
                    validation.invalid_value(f"{path}.path", value, f"cannot end with '{suffix}'")
                )
    elif kind == "ImplementationSpecific":
        if value and not str(value).startswith("/"):
            causes.append(
                validation.invalid_value(f"{path}.path", value, "must be an absolute path")
            )
    else:
        causes.append(validation.not_supported(f"{path}.pathType", kind, PATH_TYPES))
    return causes + _backend_causes(item.get("backend"), f"{path}.backend")


def _host_causes(host: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    try:
        ipaddress.ip_address(host)
        causes.append(validation.invalid_value(path, host, "must be a DNS name, not an IP address"))
    except ValueError:
        pass
    if "*" in host:
        rest = host[2:] if host.startswith("*.") else ""
        if not rest or validation.dns_subdomain_causes(path, rest):
            causes.append(validation.invalid_value(path, host, _WILDCARD))
    else:
        causes += validation.dns_subdomain_causes(path, host)
    return causes


def _spec_causes(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        spec = {}
    rules = spec.get("rules") or []
    causes: list[Cause] = []
    if not rules and spec.get("defaultBackend") is None:
        causes.append(
            validation.invalid_value(
                "spec",
                "[]networking.IngressRule(nil)",
                "either `defaultBackend` or `rules` must be specified",
            )
        )
    if spec.get("defaultBackend") is not None:
        causes += _backend_causes(spec["defaultBackend"], "spec.defaultBackend")
    for i, rule in enumerate(rules):
        where = f"spec.rules[{i}]"
        if not isinstance(rule, dict):
            continue
        if rule.get("host"):
            causes += _host_causes(str(rule["host"]), f"{where}.host")
        http = rule.get("http")
        if isinstance(http, dict):
            paths = http.get("paths") or []
            if not paths:
                causes.append(validation.required(f"{where}.http.paths"))
            for j, item in enumerate(paths):
                causes += _path_causes(item, f"{where}.http.paths[{j}]")
    for i, tls in enumerate(spec.get("tls") or []):
        for j, host in enumerate((tls or {}).get("hosts") or []):
            causes += _host_causes(str(host), f"spec.tls[{i}].hosts[{j}]")
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        causes += validation.dns_subdomain_causes("spec.ingressClassName", str(class_name))
    return causes


def _hosts(spec: dict[str, Any]) -> str:
    hosts = [
        str(r.get("host")) for r in spec.get("rules") or [] if isinstance(r, dict) and r.get("host")
    ]
    if not hosts:
        return "*"
    shown = ",".join(hosts[:3])
    return shown + (f" + {len(hosts) - 3} more..." if len(hosts) > 3 else "")


def _address(status: dict[str, Any]) -> str:
    ingress = (status.get("loadBalancer") or {}).get("ingress") or []
    return ",".join(str(i.get("ip") or i.get("hostname") or "") for i in ingress)


def _cells(obj: Obj, now: float) -> list[Any]:
    spec = spec_of(obj)
    return [
        name_of(obj),
        spec.get("ingressClassName") or "<none>",
        _hosts(spec),
        _address(status_of(obj)),
        "80, 443" if spec.get("tls") else "80",
        age(obj, now),
    ]


class IngressStrategy(Strategy):
    status_subresource = True
    generation_on_spec = True

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"loadBalancer": {}}

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + _spec_causes(obj.get("spec"))


STRATEGY = IngressStrategy(
    "Ingress",
    Printer(
        [
            col("Name", fmt="name"),
            col("Class"),
            col("Hosts"),
            col("Address"),
            col("Ports"),
            col("Age"),
        ],
        _cells,
    ),
)
