"""Field sets in FieldsV1 form, the tries ``metadata.managedFields`` entries own, and their
algebra (structured-merge-diff's ``fieldpath.Set``).

Keys are ``f:<field>`` (a struct field or map key), ``k:{"name":"web"}`` (an item of an
associative list, by its key fields), ``v:<json>`` (an item of a set) and ``.`` (the node itself
is a member); a key mapping to ``{}`` is a member with no children. Sets are never mutated: the
operations return new tries and share unchanged sub-tries.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

__all__ = [
    "MEMBER",
    "FieldSet",
    "build_node",
    "children_of",
    "difference",
    "intersection",
    "is_member",
    "paths",
    "sorted_set",
    "union",
]

FieldSet = dict[str, Any]  # FieldsV1: {"f:spec": {"f:replicas": {}}}; never mutated
MEMBER = "."

# A set is the children dict of its root (``{}`` is the empty set). Below the root a node is
# ``{}`` (a member with no children), ``{".": {}, ...children}`` (a member with children) or
# ``{...children}`` (only a prefix of members).


def is_member(node: FieldSet) -> bool:
    return not node or MEMBER in node


def children_of(node: FieldSet) -> FieldSet:
    if MEMBER not in node:
        return node
    return {k: v for k, v in node.items() if k != MEMBER}


def build_node(member: bool, children: FieldSet) -> FieldSet | None:
    if not children:
        return {} if member else None
    return {MEMBER: {}, **children} if member else children


def union(a: FieldSet, b: FieldSet) -> FieldSet:
    """The paths in ``a`` or ``b``."""
    if not a or a is b:
        return b
    if not b:
        return a
    out = dict(a)
    for key, sub in b.items():
        mine = out.get(key)
        if mine is None:
            out[key] = sub
        elif mine is not sub:
            member = is_member(mine) or is_member(sub)
            out[key] = build_node(member, union(children_of(mine), children_of(sub))) or {}
    return out


def difference(a: FieldSet, b: FieldSet) -> FieldSet:
    """The paths of ``a`` not in ``b`` (``a`` itself when none is)."""
    if not a or not b:
        return a
    out: FieldSet | None = None
    for key, other in b.items():
        mine = a.get(key)
        if mine is None:
            continue
        member = is_member(mine) and not is_member(other)
        left = build_node(member, difference(children_of(mine), children_of(other)))
        if left == mine:
            continue
        if out is None:
            out = dict(a)
        if left is None:
            del out[key]
        else:
            out[key] = left
    return a if out is None else out


def intersection(a: FieldSet, b: FieldSet) -> FieldSet:
    """The paths in both ``a`` and ``b``."""
    out: FieldSet = {}
    for key, mine in a.items():
        other = b.get(key)
        if other is None or key == MEMBER:
            continue
        member = is_member(mine) and is_member(other)
        node = build_node(member, intersection(children_of(mine), children_of(other)))
        if node is not None:
            out[key] = node
    return out


def _element(key: str) -> str:
    """One path element as structured-merge-diff prints it: ``.name``, ``[name="web"]``,
    ``[="value"]``."""
    if key.startswith("f:"):
        return "." + key[2:]
    if key.startswith("k:"):
        fields = orjson.loads(key[2:])
        return "[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in fields.items()) + "]"
    return "[=" + key[2:] + "]"


def paths(fields: FieldSet, prefix: str = "") -> Iterator[str]:
    """The member paths of ``fields`` as kube prints them (``.spec.replicas``), in
    structured-merge-diff's order: a level's members, then its children's paths."""
    keys = sorted(k for k in fields if k != MEMBER)
    for key in keys:
        if is_member(fields[key]):
            yield prefix + _element(key)
    for key in keys:
        children = children_of(fields[key])
        if children:
            yield from paths(children, prefix + _element(key))


def sorted_set(node: FieldSet) -> FieldSet:
    """``node`` with ``.`` first and the rest in key order, as kube serializes a set."""
    keys = sorted(k for k in node if k != MEMBER)
    out: FieldSet = {MEMBER: {}} if MEMBER in node else {}
    for key in keys:
        sub = node[key]
        out[key] = sorted_set(sub) if sub else {}
    return out
