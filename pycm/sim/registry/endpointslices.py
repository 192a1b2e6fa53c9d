"""discovery.k8s.io/v1 EndpointSlice (kube's ``pkg/registry/discovery/endpointslice``,
``ValidateEndpointSlice``).

Defaults: each port's ``name`` "" and ``protocol`` TCP. Validation: ``addressType`` one of
``FQDN``, ``IPv4``, ``IPv6`` (immutable); at most 1000 endpoints, each with 1 to 100 addresses
valid for the type (an IP that is not unspecified, loopback, link-local or link-local
multicast; a fully qualified domain name); at most 20000 ports with unique DNS-label names and
a protocol of ``SCTP``, ``TCP``, ``UDP``. No controller mirrors Services into slices.
"""

from __future__ import annotations

import ipaddress

from pycm.sim import validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import Printer, age, col, name_of

__all__ = ["STRATEGY", "EndpointSliceStrategy"]

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
PROTOCOLS = ("SCTP", "TCP", "UDP")
MAX_ENDPOINTS, MAX_ADDRESSES, MAX_PORTS = 1000, 100, 20000
# kube's message names ff02::/10; the range it checks (Go's IsLinkLocalMulticast) is ff02::/16.
_LINK_LOCAL_MULTICAST = {
    4: ipaddress.ip_network("224.0.0.0/24"),
    6: ipaddress.ip_network("ff02::/16"),
}


def _special_ip_causes(
    field: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address
) -> list[Cause]:
    """kube's ValidateNonSpecialIP."""
    shown = str(ip)
    if ip.is_unspecified:
        return [validation.invalid_value(field, shown, f"may not be unspecified ({shown})")]
    if ip.is_loopback:
        why = "may not be in the loopback range (127.0.0.0/8, ::1/128)"
        return [validation.invalid_value(field, shown, why)]
    if ip.is_link_local:
        why = "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
        return [validation.invalid_value(field, shown, why)]
    if ip in _LINK_LOCAL_MULTICAST[ip.version]:
        why = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
        return [validation.invalid_value(field, shown, why)]
    return []


def _address_causes(field: str, address: str, kind: str) -> list[Cause]:
    if kind == "FQDN":
        if not address or "." not in address.strip("."):
            return [
                validation.invalid_value(
                    field,
                    address,
                    "should be a domain with at least two segments separated by dots",
                )
            ]
        return validation.dns_subdomain_causes(field, address)
    version = 4 if kind == "IPv4" else 6
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        ip = None
    if ip is None or ip.version != version:
        return [validation.invalid_value(field, address, f"must be a valid IPv{version} address")]
    return _special_ip_causes(field, ip)


def _causes(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    kind = obj.get("addressType")
    if not kind:
        causes.append(validation.required("addressType"))
    elif kind not in ADDRESS_TYPES:
        causes.append(validation.not_supported("addressType", kind, ADDRESS_TYPES))
    endpoints = obj.get("endpoints") or []
    if len(endpoints) > MAX_ENDPOINTS:
        causes.append(validation.too_many("endpoints", len(endpoints), MAX_ENDPOINTS))
    for i, endpoint in enumerate(endpoints[:MAX_ENDPOINTS]):
        where = f"endpoints[{i}].addresses"
        addresses = (endpoint or {}).get("addresses") or [] if isinstance(endpoint, dict) else []
        if not addresses:
            causes.append(
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: must contain at least 1 address",
                    "field": where,
                }
            )
        elif len(addresses) > MAX_ADDRESSES:
            causes.append(validation.too_many(where, len(addresses), MAX_ADDRESSES))
        if kind in ADDRESS_TYPES:
            for j, address in enumerate(addresses[:MAX_ADDRESSES]):
                causes += _address_causes(f"{where}[{j}]", str(address), str(kind))
        hostname = endpoint.get("hostname") if isinstance(endpoint, dict) else None
        if hostname:
            causes += validation.dns_label_causes(f"endpoints[{i}].hostname", str(hostname))
    ports = obj.get("ports") or []
    if len(ports) > MAX_PORTS:
        causes.append(validation.too_many("ports", len(ports), MAX_PORTS))
    names: set[str] = set()
    for i, port in enumerate(ports[:MAX_PORTS]):
        if not isinstance(port, dict):
            continue
        name = str(port.get("name") or "")
        if name:
            causes += validation.dns_label_causes(f"ports[{i}].name", name)
        if name in names:
            causes.append(validation.duplicate(f"ports[{i}].name", name))
        names.add(name)
        protocol = port.get("protocol")
        if protocol is None:
            causes.append(validation.required(f"ports[{i}].protocol"))
        elif protocol not in PROTOCOLS:
            causes.append(validation.not_supported(f"ports[{i}].protocol", protocol, PROTOCOLS))
        number = port.get("port")
        if number is not None and (not isinstance(number, int) or not 1 <= number <= 65535):
            causes.append(
                validation.invalid_value(
                    f"ports[{i}].port", number, "must be between 1 and 65535, inclusive"
                )
            )
    return causes


def _ports(obj: Obj) -> str:
    ports = obj.get("ports") or []
    if not ports:
        return "<unset>"
    return ",".join(str(p.get("port")) if p.get("port") is not None else "<unset>" for p in ports)


def _endpoints(obj: Obj) -> str:
    addresses = [a for e in obj.get("endpoints") or [] for a in (e or {}).get("addresses") or []]
    if not addresses:
        return "<unset>"
    shown = ",".join(str(a) for a in addresses[:3])
    return shown + (f" + {len(addresses) - 3} more..." if len(addresses) > 3 else "")


class EndpointSliceStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        for port in obj.get("ports") or []:
            if isinstance(port, dict):
                if port.get("name") is None:
                    port["name"] = ""
                if port.get("protocol") is None:
                    port["protocol"] = "TCP"

    def validate(self, obj: Obj) -> list[Cause]:
        return validation.metadata_causes(obj, name_is_label=False) + _causes(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        immutable = validation.immutable(
            "addressType", new.get("addressType"), old.get("addressType")
        )
        return self.validate(new) + immutable


STRATEGY = EndpointSliceStrategy(
    "EndpointSlice",
    Printer(
        [
            col("Name", fmt="name"),
            col("AddressType"),
            col("Ports"),
            col("Endpoints"),
            col("Age"),
        ],
        lambda o, now: [
            name_of(o),
            o.get("addressType") or "",
            _ports(o),
            _endpoints(o),
            age(o, now),
        ],
    ),
)
