"""core/v1 Service (kube's ``pkg/registry/core/service``, ``ValidateService``,
``SetDefaults_Service``), stored with kube's defaults and allocations but routing nothing.

Defaults: type ``ClusterIP``, sessionAffinity ``None`` (``ClientIP`` gets its 10800 s
timeout), each port's protocol ``TCP`` and targetPort its port, internalTrafficPolicy
``Cluster``, for NodePort and LoadBalancer externalTrafficPolicy ``Cluster`` (and
allocateLoadBalancerNodePorts true); ipFamilies ``[IPv4]`` with ``SingleStack``. A create
allocates a cluster IP in 10.96.0.0/12 (unless headless, ``None``, or ExternalName) and, for
NodePort and LoadBalancer, a node port in 30000-32767 per port; an update that omits them
keeps the allocated ones; the status is reset to ``loadBalancer: {}``.

Unlike kube the allocations are derived from the Service's uid, not from a registry of what
is taken: two Services may (rarely) share an address, and a requested clusterIP or nodePort is
not checked for collisions. No endpoints, no proxying.

Validation: the type, ports (required unless headless or ExternalName; named when several,
unique DNS-label names, numbers 1-65535, protocol SCTP/TCP/UDP, a targetPort number or IANA
name), ExternalName's ``externalName``, the selector's labels, the session affinity, a
requested clusterIP an IP address; the cluster IP may not change once set.
"""

from __future__ import annotations

import hashlib
import ipaddress
from typing import Any

from pycm.sim import defaults, validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj, copy_value
from pycm.sim.registry.ingresses import dns1035_label_causes
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import Printer, age, col, name_of, spec_of, status_of

__all__ = ["STRATEGY", "ServiceStrategy"]

TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
PROTOCOLS = ("SCTP", "TCP", "UDP")
AFFINITIES = ("ClientIP", "None")
_SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
_NODE_PORTS = (30000, 32767)


def _hash(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("/".join(parts).encode()).digest()[:8], "big")


def _needs_cluster_ip(spec: dict[str, Any]) -> bool:
    return spec.get("type") != "ExternalName"


def _needs_node_ports(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _default(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "ClientIP":
        config = defaults.default(spec, "sessionAffinityConfig", {})
        client_ip = defaults.default(config, "clientIP", {}) if isinstance(config, dict) else None
        if isinstance(client_ip, dict):
            defaults.default(client_ip, "timeoutSeconds", 10800)
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            if not port.get("protocol"):
                port["protocol"] = "TCP"
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
    if _needs_node_ports(spec) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer":
        defaults.default(spec, "allocateLoadBalancerNodePorts", True)
    if _needs_cluster_ip(spec):
        defaults.default(spec, "internalTrafficPolicy", "Cluster")


def _allocate(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    uid = str(obj["metadata"].get("uid"))
    if _needs_cluster_ip(spec):
        if not spec.get("clusterIP"):
            offset = 1 + _hash(uid) % (_SERVICE_CIDR.num_addresses - 2)
            spec["clusterIP"] = str(_SERVICE_CIDR.network_address + offset)
        spec["clusterIPs"] = [spec["clusterIP"]]
        defaults.default(spec, "ipFamilies", ["IPv4"])
        defaults.default(spec, "ipFamilyPolicy", "SingleStack")
    if _needs_node_ports(spec):
        low, high = _NODE_PORTS
        for i, port in enumerate(spec.get("ports") or []):
            if isinstance(port, dict) and not port.get("nodePort"):
                port["nodePort"] = low + _hash(uid, str(i)) % (high - low + 1)


def _keep_allocations(new: Obj, old: Obj) -> None:
    """An update that omits the allocated IP or node ports keeps them (kube's
    patchAllocatedValues)."""
    spec, old_spec = new.get("spec"), old.get("spec") or {}
    if not isinstance(spec, dict):
        return
    if _needs_cluster_ip(spec) and _needs_cluster_ip(old_spec) and not spec.get("clusterIP"):
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if key in old_spec and key not in spec:
                spec[key] = copy_value(old_spec[key])
        if not spec.get("clusterIP") and "clusterIP" in old_spec:
            spec["clusterIP"] = old_spec["clusterIP"]
    if _needs_node_ports(spec) and _needs_node_ports(old_spec):
        allocated = {
            (p.get("port"), p.get("protocol") or "TCP"): p.get("nodePort")
            for p in old_spec.get("ports") or []
            if isinstance(p, dict)
        }
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                found = allocated.get((port.get("port"), port.get("protocol") or "TCP"))
                if found:
                    port["nodePort"] = found


def _port_causes(spec: dict[str, Any]) -> list[Cause]:
    ports = spec.get("ports") or []
    causes: list[Cause] = []
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and spec.get("type") != "ExternalName":
        causes.append(validation.required("spec.ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        where = f"spec.ports[{i}]"
        if not isinstance(port, dict):
            continue
        name = str(port.get("name") or "")
        if len(ports) > 1 and not name:
            causes.append(validation.required(f"{where}.name"))
        elif name:
            causes += validation.dns_label_causes(f"{where}.name", name)
            if name in names:
                causes.append(validation.duplicate(f"{where}.name", name))
            names.add(name)
        number = port.get("port")
        if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= 65535:
            causes.append(
                validation.invalid_value(
                    f"{where}.port", number, "must be between 1 and 65535, inclusive"
                )
            )
        protocol = port.get("protocol")
        if protocol not in PROTOCOLS:
            causes.append(validation.not_supported(f"{where}.protocol", protocol, PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, int) and not 1 <= target <= 65535:
            causes.append(
                validation.invalid_value(
                    f"{where}.targetPort", target, "must be between 1 and 65535, inclusive"
                )
            )
        elif isinstance(target, str) and not target.isdigit():
            causes += validation.port_name_causes(f"{where}.targetPort", target)
    return causes


def _spec_causes(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return [validation.required("spec.ports")]
    causes: list[Cause] = []
    stype = spec.get("type")
    if stype not in TYPES:
        causes.append(validation.not_supported("spec.type", stype, TYPES))
    if stype == "ExternalName":
        external = spec.get("externalName")
        if not external:
            causes.append(validation.required("spec.externalName"))
        else:
            causes += validation.dns_subdomain_causes("spec.externalName", str(external))
    causes += _port_causes(spec)
    causes += validation.labels_causes("spec.selector", spec.get("selector"))
    affinity = spec.get("sessionAffinity")
    if affinity not in AFFINITIES:
        causes.append(validation.not_supported("spec.sessionAffinity", affinity, AFFINITIES))
    cluster_ip = spec.get("clusterIP")
    if cluster_ip not in (None, "", "None"):
        try:
            ipaddress.ip_address(str(cluster_ip))
        except ValueError:
            causes.append(
                validation.invalid_value(
                    "spec.clusterIPs[0]",
                    cluster_ip,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )
            )
    return causes


def _external_ip(obj: Obj) -> str:
    spec, status = spec_of(obj), status_of(obj)
    stype = spec.get("type")
    external = [str(ip) for ip in spec.get("externalIPs") or []]
    if stype == "ExternalName":
        return str(spec.get("externalName") or "")
    if stype == "LoadBalancer":
        ingress = (status.get("loadBalancer") or {}).get("ingress") or []
        found = [str(i.get("ip") or i.get("hostname") or "") for i in ingress] + external
        return ",".join(found) or "<pending>"
    return ",".join(external) or "<none>"


def _ports(spec: dict[str, Any]) -> str:
    shown = []
    for port in spec.get("ports") or []:
        node = f":{port['nodePort']}" if port.get("nodePort") else ""
        shown.append(f"{port.get('port')}{node}/{port.get('protocol') or 'TCP'}")
    return ",".join(shown) or "<none>"


def _cells(obj: Obj, now: float) -> list[Any]:
    spec = spec_of(obj)
    selector = spec.get("selector") or {}
    return [
        name_of(obj),
        spec.get("type") or "",
        (spec.get("clusterIPs") or [None])[0] or spec.get("clusterIP") or "<none>",
        _external_ip(obj),
        _ports(spec),
        age(obj, now),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


class ServiceStrategy(Strategy):
    status_subresource = True

    def default(self, obj: Obj) -> None:
        _default(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"loadBalancer": {}}
        _allocate(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        _keep_allocations(new, old)

    def validate(self, obj: Obj) -> list[Cause]:
        # A Service's name is a DNS-1035 label (it becomes a DNS name and env var prefix).
        causes = validation.metadata_causes(obj, name_is_label=True)
        name = (obj.get("metadata") or {}).get("name")
        if isinstance(name, str) and name:
            causes = [c for c in causes if c["field"] != "metadata.name"]
            causes = dns1035_label_causes("metadata.name", name) + causes
        return causes + _spec_causes(obj.get("spec"))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        if (
            _needs_cluster_ip(new_spec)
            and old_spec.get("clusterIP")
            and new_spec.get("clusterIP") != old_spec.get("clusterIP")
        ):
            causes.append(
                validation.invalid_value(
                    "spec.clusterIPs[0]",
                    str(new_spec.get("clusterIPs") or [new_spec.get("clusterIP")]),
                    "may not change once set",
                )
            )
        return causes


STRATEGY = ServiceStrategy(
    "Service",
    Printer(
        [
            col("Name", fmt="name"),
            col("Type"),
            col("Cluster-IP"),
            col("External-IP"),
            col("Port(s)"),
            col("Age"),
            col("Selector", priority=1),
        ],
        _cells,
    ),
)
