"""The schemas of the kinds the emulator serves, as data: which fields kube's Go types declare.

kube-apiserver decodes a body into the Go type of its resource, so a field the type does not
declare is dropped (see :mod:`pycm.sim.pruning`). Here each Go struct is a :data:`Struct`, a
mapping from its JSON field names to what the field holds:

- another :data:`Struct` (a nested object: its fields are checked in turn);
- :class:`ListOf` a struct (a list of objects: each item is checked);
- :attr:`Kept.LEAF` (a scalar, a list of scalars, an int-or-string, a time);
- :attr:`Kept.MAP` (string keys to scalars: labels, annotations, resource quantities,
  nodeSelector, a ConfigMap's data; the keys are data, never pruned);
- :attr:`Kept.OPAQUE` (a struct, or a list of them, not declared here: kept whole, unchecked).

A struct declared here is declared *completely* (current Kubernetes, 1.37 — the installed
``kubernetes`` client's models; tests/sim/test_schemas.py checks each against them): pruning a
field a real cluster keeps would lose a user's data, which is worse than keeping a typo. When in
doubt a sub-structure is OPAQUE.

One module per API group (:mod:`.meta`, :mod:`.core`, :mod:`.apps`, :mod:`.batch`,
:mod:`.networking`, :mod:`.rbac`), the vocabulary in :mod:`.fields` and every kind's top-level
type in :mod:`.kinds`; this package re-exports them all (the OpenAPI documents find a named
struct here by its attribute name, :data:`pycm.sim.openapi.definitions.NAMED_STRUCTS`).
"""

from __future__ import annotations

from pycm.sim.schemas.apps import (
    DAEMON_SET_SPEC,
    DAEMON_SET_STATUS,
    DEPLOYMENT_SPEC,
    DEPLOYMENT_STATUS,
    REPLICA_SET_SPEC,
    REPLICA_SET_STATUS,
    STATEFUL_SET_SPEC,
    STATEFUL_SET_STATUS,
)
from pycm.sim.schemas.batch import (
    CRON_JOB_SPEC,
    JOB_SPEC,
    JOB_STATUS,
)
from pycm.sim.schemas.core import (
    AFFINITY,
    CONTAINER,
    CONTAINER_STATUS,
    ENV_FROM_SOURCE,
    ENV_VAR,
    EPHEMERAL_CONTAINER,
    LIFECYCLE,
    LOCAL_OBJECT_REFERENCE,
    PERSISTENT_VOLUME_CLAIM_SPEC,
    PERSISTENT_VOLUME_CLAIM_STATUS,
    POD_SPEC,
    POD_STATUS,
    POD_TEMPLATE_SPEC,
    PROBE,
    RESOURCE_REQUIREMENTS,
    SECURITY_CONTEXT,
    TOLERATION,
    VOLUME,
)
from pycm.sim.schemas.fields import Field, Kept, ListOf, Struct
from pycm.sim.schemas.kinds import KINDS
from pycm.sim.schemas.meta import (
    LABEL_SELECTOR,
    OBJECT_META,
    OWNER_REFERENCE,
)
from pycm.sim.schemas.networking import (
    ENDPOINT,
    INGRESS_SPEC,
    NETWORK_POLICY_PORT,
    NETWORK_POLICY_SPEC,
)
from pycm.sim.schemas.rbac import AGGREGATION_RULE, POLICY_RULE, ROLE_REF, SUBJECT

__all__ = [
    "AFFINITY",
    "AGGREGATION_RULE",
    "CONTAINER",
    "CONTAINER_STATUS",
    "CRON_JOB_SPEC",
    "DAEMON_SET_SPEC",
    "DAEMON_SET_STATUS",
    "DEPLOYMENT_SPEC",
    "DEPLOYMENT_STATUS",
    "ENDPOINT",
    "ENV_FROM_SOURCE",
    "ENV_VAR",
    "EPHEMERAL_CONTAINER",
    "INGRESS_SPEC",
    "JOB_SPEC",
    "JOB_STATUS",
    "KINDS",
    "LABEL_SELECTOR",
    "LIFECYCLE",
    "LOCAL_OBJECT_REFERENCE",
    "NETWORK_POLICY_PORT",
    "NETWORK_POLICY_SPEC",
    "OBJECT_META",
    "OWNER_REFERENCE",
    "PERSISTENT_VOLUME_CLAIM_SPEC",
    "PERSISTENT_VOLUME_CLAIM_STATUS",
    "POD_SPEC",
    "POD_STATUS",
    "POD_TEMPLATE_SPEC",
    "POLICY_RULE",
    "PROBE",
    "REPLICA_SET_SPEC",
    "REPLICA_SET_STATUS",
    "RESOURCE_REQUIREMENTS",
    "ROLE_REF",
    "SECURITY_CONTEXT",
    "STATEFUL_SET_SPEC",
    "STATEFUL_SET_STATUS",
    "SUBJECT",
    "TOLERATION",
    "VOLUME",
    "Field",
    "Kept",
    "ListOf",
    "Struct",
]
