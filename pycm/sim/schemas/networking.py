"""networking.k8s.io/v1 Ingresses and discovery.k8s.io/v1 endpoints."""

from __future__ import annotations

from pycm.sim.schemas.fields import LEAF, MAP, OPAQUE, ListOf, Struct, leaves

__all__ = [
    "ENDPOINT",
    "INGRESS_SPEC",
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
