"""How a kind's lists and maps are merged and owned (server-side apply, managedFields).

structured-merge-diff reads these from the kind's schema: ``x-kubernetes-list-type`` (``map``
with ``x-kubernetes-list-map-keys``, ``set``, ``atomic``) and ``x-kubernetes-map-type``
(``atomic`` or ``granular``). A :class:`ListRules` holds them by field name, which is exact for
the built-in kinds (:data:`BUILTIN_RULES`, written from their Go types)
and for a custom resource whose schema does not give one name two meanings (the first met wins).

A custom resource's rules come from its CRD's ``openAPIV3Schema``
(:func:`rules_from_schema`): a list without a list type is atomic, as kube-apiserver treats it;
objects are granular unless ``x-kubernetes-map-type: atomic``; a map key's ``default`` fills an
item that leaves the key out. Unlike a Go type, an unstructured object keeps its empty maps and
lists and has no zero-valued structs — except its metadata, which is Go's ObjectMeta.
:func:`rules_for` finds a resource's rules: its strategy's ``raw_schema`` when it has one (a
custom resource's), else the built-in rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ATOMIC_MAPS",
    "BUILTIN_RULES",
    "EMPTY_MAPS",
    "KEY_DEFAULTS",
    "LIST_KEYS",
    "SET_LISTS",
    "ZERO_PRESENT",
    "ListRules",
    "rules_for",
    "rules_from_schema",
    "rules_of",
]

_MAX_DEPTH = 64  # a CRD's schema is bounded deeper than this by its registry
# A custom resource's metadata is still Go's ObjectMeta: a struct always present, whose maps
# drop out when empty.
_META_STRUCT = frozenset({("metadata",)})
_META_MAPS = frozenset({"labels", "annotations"})


@dataclass(frozen=True, eq=False)
class ListRules:
    """One kind's list and map semantics by field name (hashed by identity: a cache key)."""

    # Associative lists: field -> its key fields (alternatives: the first whose first field an
    # item has).
    list_keys: Mapping[str, tuple[tuple[str, ...], ...]]
    # Lists of scalars owned item by item (``v:<json>``).
    set_lists: frozenset[str]
    # Maps owned whole.
    atomic_maps: frozenset[str]
    # Key fields' defaults: field -> {key: default}.
    key_defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Maps Go's ``omitempty`` drops when empty (and whether empty lists are dropped too).
    empty_maps: frozenset[str] = frozenset()
    empty_lists_absent: bool = False
    # Paths whose Go zero value already holds a struct (see ZERO_PRESENT).
    zero_present: frozenset[tuple[str, ...]] = frozenset()


def rules_from_schema(schema: Mapping[str, Any]) -> ListRules:
    """A custom resource's rules from its structural ``openAPIV3Schema``."""
    list_keys: dict[str, tuple[tuple[str, ...], ...]] = {}
    sets: set[str] = set()
    atomic: set[str] = set()
    defaults: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()

    def walk(name: str, node: Any, depth: int) -> None:
        if depth > _MAX_DEPTH or not isinstance(node, Mapping):
            return
        if name and name not in seen:
            seen.add(name)
            list_type = node.get("x-kubernetes-list-type")
            keys = node.get("x-kubernetes-list-map-keys")
            if list_type == "map" and isinstance(keys, list) and keys:
                list_keys[name] = (tuple(str(k) for k in keys),)
                item_props = (node.get("items") or {}).get("properties") or {}
                found = {
                    str(k): item_props[k]["default"]
                    for k in keys
                    if isinstance(item_props.get(k), Mapping) and "default" in item_props[k]
                }
                if found:
                    defaults[name] = found
            elif list_type == "set":
                sets.add(name)
            if node.get("x-kubernetes-map-type") == "atomic":
                atomic.add(name)
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            for key, sub in properties.items():
                walk(str(key), sub, depth + 1)
        for nested in ("items", "additionalProperties"):
            sub = node.get(nested)
            if isinstance(sub, Mapping):
                walk("", sub, depth + 1)

    walk("", schema, 0)
    return ListRules(
        list_keys,
        frozenset(sets),
        frozenset(atomic),
        defaults,
        empty_maps=_META_MAPS,
        zero_present=_META_STRUCT,
    )


# Rules per schema object (a CRD version's schema is replaced, never changed, on an update).
_CACHE: dict[int, tuple[Mapping[str, Any], ListRules]] = {}
_CACHE_SIZE = 256


def rules_for(resource: Any, builtin: ListRules) -> ListRules:
    """``resource``'s rules: from its strategy's ``raw_schema`` (a custom resource's), else
    ``builtin``."""
    schema = getattr(getattr(resource, "strategy", None), "raw_schema", None)
    if not isinstance(schema, Mapping):
        return builtin
    cached = _CACHE.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    rules = rules_from_schema(schema)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    _CACHE[id(schema)] = (schema, rules)
    return rules


# ---------------------------------------------------------------- the built-in kinds

# Associative lists (``+listType=map``): field name -> its key fields (alternatives, the first
# whose first field an item has). Items are ``k:{...}`` with the key fields present, sorted.
LIST_KEYS: dict[str, tuple[tuple[str, ...], ...]] = {
    "containers": (("name",),),
    "initContainers": (("name",),),
    "ephemeralContainers": (("name",),),
    "volumes": (("name",),),
    "env": (("name",),),
    "imagePullSecrets": (("name",),),
    "resourceClaims": (("name",),),
    "ports": (("containerPort", "protocol"), ("port", "protocol")),
    "volumeMounts": (("mountPath",),),
    "volumeDevices": (("devicePath",),),
    "conditions": (("type",),),
    "addresses": (("type",),),
    "ownerReferences": (("uid",),),
    "podIPs": (("ip",),),
    "hostIPs": (("ip",),),
    "hostAliases": (("ip",),),
    "topologySpreadConstraints": (("topologyKey", "whenUnsatisfiable"),),
}
# Key fields with a default (``+default``): an item that leaves one out is keyed with the
# default, as structured-merge-diff does — so an applied ``{containerPort: 80}`` is the stored
# (defaulted) ``{containerPort: 80, protocol: TCP}``, not a second port.
KEY_DEFAULTS: dict[str, dict[str, Any]] = {"ports": {"protocol": "TCP"}}
# Sets of scalars (``+listType=set``): items are ``v:<json>``.
SET_LISTS = frozenset({"finalizers"})
# Maps owned whole (``+structType=atomic`` / ``+mapType=atomic``): LabelSelectors.
ATOMIC_MAPS = frozenset({"selector", "labelSelector", "namespaceSelector"})
# Maps of strings (Go ``map[string]...`` with ``omitempty``): empty, they are absent.
EMPTY_MAPS = frozenset(
    {
        "labels",
        "annotations",
        "data",
        "binaryData",
        "nodeSelector",
        "matchLabels",
        "limits",
        "requests",
        "capacity",
        "allocatable",
    }
)
# Paths (from the object's root) whose value a Go zero value of the served kinds already holds —
# non-pointer structs and non-omitempty lists: filling one does not make the struct a member.
ZERO_PRESENT = frozenset(
    {
        ("metadata",),
        ("spec",),
        ("status",),
        ("spec", "containers"),
        ("spec", "strategy"),
        ("spec", "template"),
        ("spec", "template", "metadata"),
        ("spec", "template", "spec"),
        ("spec", "template", "spec", "containers"),
        ("involvedObject",),
        ("source",),
    }
)
# The built-in kinds' rules, from the tables above.
BUILTIN_RULES = ListRules(
    LIST_KEYS,
    SET_LISTS,
    ATOMIC_MAPS,
    KEY_DEFAULTS,
    empty_maps=EMPTY_MAPS,
    empty_lists_absent=True,
    zero_present=ZERO_PRESENT,
)


def rules_of(resource: Any) -> ListRules:
    """A resource's list and map rules: a custom resource's from its schema, else the
    built-in kinds'."""
    return rules_for(resource, BUILTIN_RULES)
