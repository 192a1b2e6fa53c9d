"""Which fields an object sets and a write changes, under a kind's list and map rules
(structured-merge-diff's typed ``Compare`` and ``ToFieldSet``), as field sets
(:mod:`pycm.sim.fieldset`) without what no managedFields entry owns.

A null is taken for absent; which structs a Go zero value already holds (so a write that fills
them does not own the struct itself, no ``.``) is the rules' ``zero_present`` path table
(:data:`pycm.sim.listrules.ZERO_PRESENT` for the built-in kinds).
"""

from __future__ import annotations

import functools
from typing import Any

import orjson

from pycm.sim.fieldset import MEMBER, FieldSet, build_node, children_of, sorted_set
from pycm.sim.listrules import BUILTIN_RULES, ListRules
from pycm.sim.objects import Obj

__all__ = ["applied_fields", "changed_fields", "created_fields", "item_key", "view"]

_STRIPPED_META = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "selfLink",
        "managedFields",
        "clusterName",
    }
)
_ABSENT: Any = object()  # a side of a comparison that has no value at the path


def item_key(field: str, item: Any, rules: ListRules = BUILTIN_RULES) -> str | None:
    """The path element of an associative list's item (None: the list is treated atomic)."""
    if not isinstance(item, dict):
        return None
    defaults = rules.key_defaults.get(field, {})
    for keys in rules.list_keys[field]:
        if keys[0] in item:
            present = {k: item.get(k, defaults.get(k)) for k in sorted(keys)}
            present = {k: v for k, v in present.items() if v is not None}
            return "k:" + orjson.dumps(present).decode()
    return None


def _list_items(field: str, value: Any, rules: ListRules) -> dict[str, Any] | None:
    """An associative or set list's items by path element (None: treat the list atomic)."""
    if not isinstance(value, list):
        return None
    items: dict[str, Any] = {}
    for item in value:
        if field in rules.set_lists:
            key: str | None = "v:" + orjson.dumps(item).decode()
        else:
            key = item_key(field, item, rules)
        if key is None or key in items:
            return None
        items[key] = item
    return items


def _children(value: Any, field: str, rules: ListRules) -> dict[str, Any] | None:
    """A granular map's or list's children by path element; None for a leaf (a scalar, null,
    an atomic map or list, a list whose items have no usable key). Absent: no children."""
    if value is _ABSENT:
        return {}
    if isinstance(value, dict):
        if field in rules.atomic_maps:
            return None
        return {"f:" + k: v for k, v in value.items()}
    if isinstance(value, list) and (field in rules.list_keys or field in rules.set_lists):
        return _list_items(field, value, rules)
    return None


def _omitted_when_empty(value: Any, field: str, rules: ListRules) -> bool:
    """An empty list, or an empty map of the rules' ``empty_maps``: Go's ``omitempty`` drops it, so
    kube never sees it (an empty struct, such as ``resources: {}``, it keeps)."""
    if isinstance(value, list):
        return rules.empty_lists_absent
    return isinstance(value, dict) and field in rules.empty_maps


def _empty(value: Any) -> bool:
    return value is _ABSENT or (isinstance(value, dict | list) and not value)


def _compare(
    old: Any, new: Any, field: str, path: tuple[str, ...] | None, rules: ListRules
) -> tuple[FieldSet | None, FieldSet | None]:
    """The (added or changed, removed) node for one value, None where nothing is.

    ``path`` is the field path from the root while it can be in the rules' ``zero_present`` (None
    below list items): there an absent side stands for the Go zero value, an empty struct. A
    null is taken for absent: kube's objects hold one only where the Go zero value holds it
    too (a template's ``creationTimestamp``), never as a change."""
    if old is None or (not old and _omitted_when_empty(old, field, rules)):
        old = _ABSENT
    if new is None or (not new and _omitted_when_empty(new, field, rules)):
        new = _ABSENT
    if old is new or (old is not _ABSENT and new is not _ABSENT and old == new):
        return None, None
    zero = path is not None and path in rules.zero_present
    if zero and _empty(old) and _empty(new):
        return None, None
    old_children = _children(old, field, rules)
    new_children = _children(new, field, rules)
    leaf = (
        old_children is None
        or new_children is None
        or (_empty(old) and _empty(new))  # kube keeps the empty / null distinction this way
        or (old is not _ABSENT and new is not _ABSENT and type(old) is not type(new))
    )
    if leaf:
        if new is _ABSENT:
            return None, {}
        return {}, None
    assert old_children is not None and new_children is not None
    changed: FieldSet = {}
    removed: FieldSet = {}
    # New's keys first, then those only old has (whose comparison only ever removes).
    for key in {**new_children, **old_children}:
        o = old_children.get(key, _ABSENT)
        n = new_children.get(key, _ABSENT)
        if o is n:
            continue
        named = key[0] == "f"
        sub_path = (*path, key[2:]) if path is not None and named else None
        c, r = _compare(o, n, key[2:] if named else "", sub_path, rules)
        if c is not None:
            changed[key] = c
        if r is not None:
            removed[key] = r
    return (
        build_node(old is _ABSENT and not zero, changed),
        build_node(new is _ABSENT and not zero, removed),
    )


def view(obj: Obj | None, drop: str) -> Obj:
    """``obj`` without what no entry owns (and without the top-level field ``drop``)."""
    if obj is None:
        return {}
    skip = _TOP_SKIP[drop]
    view = {k: v for k, v in obj.items() if k not in skip}
    m = view.get("metadata")
    if isinstance(m, dict):
        view["metadata"] = {k: v for k, v in m.items() if k not in _STRIPPED_META}
    return view


_TOP_SKIP = {
    drop: frozenset({"apiVersion", "kind", drop} - {""}) for drop in ("", "status", "spec")
}


def changed_fields(
    old: Obj | None, new: Obj, drop: str = "", rules: ListRules = BUILTIN_RULES
) -> tuple[FieldSet, FieldSet]:
    """(added or changed, removed) between ``old`` (None: a create) and ``new``, ignoring the
    fields no entry owns and the top-level field ``drop`` (a reset one: status, spec). The
    first is in kube's key order; both may be shared: never mutate them."""
    if old is None:
        # Creates from one template (a ReplicaSet's pods) share one computation.
        return created_fields(orjson.dumps(view(new, drop)), rules), {}
    changed, removed = _compare(view(old, drop), view(new, drop), "", (), rules)
    return sorted_set(changed) if changed else {}, removed or {}


@functools.lru_cache(maxsize=256)
def created_fields(view: bytes, rules: ListRules = BUILTIN_RULES) -> FieldSet:
    changed, _ = _compare({}, orjson.loads(view), "", (), rules)  # the root is never a member
    return sorted_set(changed) if changed else {}


def applied_fields(config: Obj, drop: str = "", rules: ListRules = BUILTIN_RULES) -> FieldSet:
    """The fields a server-side apply's configuration sets (its manager's set), without what
    no entry owns and the top-level field ``drop`` (a reset one). As structured-merge-diff's
    ToFieldSet: leaves, empty maps and lists' items are members; a map or struct with fields
    is only their prefix (an Apply entry has ``f:data: {f:key: {}}``, an Update's has a ``.``)."""
    return _prefixes_only(created_fields(orjson.dumps(view(config, drop)), rules))


def _prefixes_only(node: FieldSet) -> FieldSet:
    out: FieldSet = {}
    for key, sub in node.items():
        if not sub:
            out[key] = sub
            continue
        children = _prefixes_only(children_of(sub))
        member = key[0] != "f" and MEMBER in sub  # a list item stays a member
        out[key] = build_node(member, children) or {}
    return out
