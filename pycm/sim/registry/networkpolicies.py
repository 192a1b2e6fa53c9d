"""networking.k8s.io/v1 NetworkPolicy (kube's ``pkg/registry/networking/networkpolicy``,
``ValidateNetworkPolicy``).

Defaults: ``policyTypes`` ``[Ingress]`` (and ``Egress`` when egress rules are given), a port's
``protocol`` TCP. Validation: the pod selector and every peer's selectors as label selectors;
a peer is a pod and/or namespace selector or an ``ipBlock`` alone (its ``cidr`` a CIDR, each
``except`` a strict subset of it); ports TCP, UDP or SCTP, a number 1-65535 (``endPort`` at
least ``port``) or an IANA port name; at most two policy types, Ingress or Egress. A spec
change bumps the generation. Nothing enforces a policy: the emulator has no network.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pycm.sim import validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import Printer, age, col, name_of, selector_of, spec_of

__all__ = ["STRATEGY", "NetworkPolicyStrategy"]

_PROTOCOLS = ("TCP", "UDP", "SCTP")
_POLICY_TYPES = ("Ingress", "Egress")
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_CIDR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def _rules(spec: dict[str, Any], direction: str) -> list[dict[str, Any]]:
    return [r for r in spec.get(direction) or [] if isinstance(r, dict)]


def _port_causes(port: dict[str, Any], where: str) -> list[Cause]:
    causes: list[Cause] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PROTOCOLS:
        causes.append(validation.not_supported(f"{where}.protocol", protocol, _PROTOCOLS))
    number, end = port.get("port"), port.get("endPort")
    if isinstance(number, int) and not isinstance(number, bool):
        if not 1 <= number <= 65535:
            causes.append(validation.invalid_value(f"{where}.port", number, _PORT_RANGE))
        if isinstance(end, int):
            if end < number:
                why = "must be greater than or equal to `port`"
                causes.append(validation.invalid_value(f"{where}.endPort", end, why))
            if not 1 <= end <= 65535:
                causes.append(validation.invalid_value(f"{where}.endPort", end, _PORT_RANGE))
    elif isinstance(number, str):
        if end is not None:
            why = "may not be specified when `port` is non-numeric"
            causes.append(validation.invalid_value(f"{where}.endPort", end, why))
        causes += validation.port_name_causes(f"{where}.port", number)
    elif end is not None:
        why = "may not be specified when `port` is not specified"
        causes.append(validation.invalid_value(f"{where}.endPort", end, why))
    return causes


def _network(text: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(str(text), strict=False)
    except ValueError:
        return None


def _ip_block_causes(block: dict[str, Any], where: str) -> list[Cause]:
    cidr = block.get("cidr")
    if not cidr:
        return [validation.required(f"{where}.cidr")]
    network = _network(cidr) if "/" in str(cidr) else None
    if network is None:
        return [validation.invalid_value(f"{where}.cidr", str(cidr), _CIDR)]
    causes: list[Cause] = []
    for i, text in enumerate(block.get("except") or []):
        field = f"{where}.except[{i}]"
        inner = _network(text) if "/" in str(text) else None
        if inner is None:
            causes.append(validation.invalid_value(field, str(text), _CIDR))
        elif (
            inner.version != network.version
            or inner.network_address not in network
            or inner.prefixlen <= network.prefixlen
        ):
            causes.append(
                validation.invalid_value(field, str(text), "must be a strict subset of `cidr`")
            )
    return causes


def _peer_causes(peer: dict[str, Any], where: str) -> list[Cause]:
    causes: list[Cause] = []
    given = 0
    for name in ("podSelector", "namespaceSelector"):
        if peer.get(name) is not None:
            given += 1
            causes += validation.label_selector_causes(f"{where}.{name}", peer[name])
    block = peer.get("ipBlock")
    if isinstance(block, dict):
        given += 1
        causes += _ip_block_causes(block, f"{where}.ipBlock")
    if given == 0:
        causes.append(
            {**validation.required(where), "message": "Required value: must specify a peer"}
        )
    elif given > 1 and isinstance(block, dict):
        causes.append(validation.forbidden(where, "may not specify both ipBlock and another peer"))
    return causes


def _spec_causes(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        return []
    causes = validation.label_selector_causes("spec.podSelector", spec.get("podSelector"))
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(_rules(spec, direction)):
            where = f"spec.{direction}[{i}]"
            for j, port in enumerate(rule.get("ports") or []):
                if isinstance(port, dict):
                    causes += _port_causes(port, f"{where}.ports[{j}]")
            for j, peer in enumerate(rule.get(peers) or []):
                if isinstance(peer, dict):
                    causes += _peer_causes(peer, f"{where}.{peers}[{j}]")
    types = spec.get("policyTypes") or []
    if len(types) > len(_POLICY_TYPES):
        shown = "&[]networking.PolicyType{" + ", ".join(f'"{t}"' for t in types) + "}"
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {shown}: may not specify more than two policyTypes",
                "field": "spec.policyTypes",
            }
        )
        return causes
    for i, kind in enumerate(types):
        if kind not in _POLICY_TYPES:
            causes.append(validation.not_supported(f"spec.policyTypes[{i}]", kind, _POLICY_TYPES))
    return causes


class NetworkPolicyStrategy(Strategy):
    generation_on_spec = True

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if not spec.get("policyTypes"):
            spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
        for direction in ("ingress", "egress"):
            for rule in _rules(spec, direction):
                for port in rule.get("ports") or []:
                    if isinstance(port, dict) and port.get("protocol") is None:
                        port["protocol"] = "TCP"

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        return causes + _spec_causes(obj.get("spec"))


STRATEGY = NetworkPolicyStrategy(
    "NetworkPolicy",
    Printer(
        [col("Name", fmt="name"), col("Pod-Selector"), col("Age")],
        lambda o, now: [
            name_of(o),
            selector_of(o, spec_of(o).get("podSelector") or {}),
            age(o, now),
        ],
    ),
)
