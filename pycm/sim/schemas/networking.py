"""networking.k8s.io/v1 Ingresses and NetworkPolicies, discovery.k8s.io/v1 endpoints."""

from __future__ import annotations

from pycm.sim.schemas.fields import LEAF, MAP, OPAQUE, ListOf, Struct, leaves
from pycm.sim.schemas.meta import LABEL_SELECTOR

__all__ = [
    "ENDPOINT",
    "INGRESS_SPEC",
    "NETWORK_POLICY_PORT",
    "NETWORK_POLICY_SPEC",
]

_INGRESS_BACKEND: Struct = {
    "service": {"name": LEAF, "port": leaves("name", "number")},
    "resource": leaves("apiGroup", "kind", "name"),
}
INGRESS_SPEC: Struct = {
    "ingressClassName": LEAF,
    "defaultBackend": _INGRESS_BACKEND,
    "rules": ListOf(
        {
            "host": LEAF,
            "http": {
                "paths": ListOf({"path": LEAF, "pathType": LEAF, "backend": _INGRESS_BACKEND})
            },
        }
    ),
    "tls": ListOf(leaves("hosts", "secretName")),
}
ENDPOINT: Struct = {
    **leaves("addresses", "hostname", "nodeName", "zone"),
    "conditions": leaves("ready", "serving", "terminating"),
    "deprecatedTopology": MAP,
    "hints": OPAQUE,
    "targetRef": OPAQUE,
}
NETWORK_POLICY_PORT: Struct = leaves("protocol", "port", "endPort")
_NETWORK_POLICY_PEER: Struct = {
    "podSelector": LABEL_SELECTOR,
    "namespaceSelector": LABEL_SELECTOR,
    "ipBlock": leaves("cidr", "except"),
}
NETWORK_POLICY_SPEC: Struct = {
    "podSelector": LABEL_SELECTOR,
    "ingress": ListOf({"ports": ListOf(NETWORK_POLICY_PORT), "from": ListOf(_NETWORK_POLICY_PEER)}),
    "egress": ListOf({"ports": ListOf(NETWORK_POLICY_PORT), "to": ListOf(_NETWORK_POLICY_PEER)}),
    "policyTypes": LEAF,
}
