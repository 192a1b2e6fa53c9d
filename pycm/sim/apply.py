"""Server-side apply: ``PATCH`` with ``Content-Type: application/apply-patch+yaml``.

The body is the manager's *applied configuration* (YAML or JSON): the fields it sets are the
fields the manager wants to own, with those values. As structured-merge-diff's
``Updater.Apply`` (with kube's field-manager wrappers) does it:

1. The configuration is merged into the live object: maps field by field, associative lists
   item by item by their keys (containers by ``name``, ports by ``containerPort`` and
   ``protocol``: :data:`pycm.sim.listrules.LIST_KEYS`), sets of scalars as unions, and
   everything else (scalars, atomic lists and maps such as label selectors) replaced.
2. The manager's set becomes exactly the configuration's fields. Fields it owned before and no
   longer applies are removed from the object, unless another manager owns them (or something
   beneath them).
3. The live and the new object are compared. Fields the apply adds or changes that another
   manager owns are conflicts: 409 ``Apply failed with 1 conflict: conflict with
   "kubectl-client-side-apply" using apps/v1: .spec.replicas`` (one ``FieldManagerConflict``
   cause per field) — unless ``force=true``, which moves them to the applier. Fields set to the
   value they already had are shared, not conflicts; fields changed or removed leave their
   other owners.
4. The object is written with the manager's ``Apply`` entry (``operation: Apply``; its identity
   is the manager and subresource, not the apiVersion) and the others' entries as they are
   left; the write itself is not recorded again as an Update.

An apply to an absent object creates it. An apply to the ``status`` subresource sets and owns
only status; one to the main resource of a kind with a status subresource ignores status
(kube's reset fields).

Differs from kube-apiserver: list and map semantics come from field names
(:mod:`pycm.sim.listrules`: the built-in kinds' tables; a custom resource's from its schema's
markers), not from each path of the schema; a merged associative list
keeps the live items' order with new items appended (kube orders by the configuration); a
``null`` in a configuration removes the field; the fields the emulator's defaulting fills
belong to no one (kube's do too, for apply); no conversion between versions (every kind is
served at one version).
"""

from __future__ import annotations

from typing import Any

import orjson

from pycm.sim import errors, fieldcompare, fieldset, listrules, managedfields
from pycm.sim.errors import Cause
from pycm.sim.fieldset import FieldSet
from pycm.sim.listrules import BUILTIN_RULES, ListRules
from pycm.sim.managedfields import APPLY
from pycm.sim.objects import Obj, deep_copy, rfc3339
from pycm.sim.resources import Resource
from pycm.sim.store import Store

__all__ = ["APPLY_PATCH", "apply", "merge_applied", "remove_fields"]

APPLY_PATCH = "application/apply-patch+yaml"
_ABSENT: Any = object()


# ---------------------------------------------------------------- merging


def merge_applied(live: Any, config: Any, field: str = "", rules: ListRules = BUILTIN_RULES) -> Any:
    """``config`` merged into ``live`` (step 1 of the module docstring); neither is mutated."""
    if isinstance(config, dict) and isinstance(live, dict):
        if field in rules.atomic_maps:
            return deep_copy(config)
        out = dict(live)
        for key, value in config.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = merge_applied(live.get(key, _ABSENT), value, key, rules)
        return out
    if isinstance(config, list) and isinstance(live, list):
        if field in rules.set_lists:
            return list(live) + [v for v in config if v not in live]
        if field in rules.list_keys:
            merged = _merge_keyed(field, live, config, rules)
            if merged is not None:
                return merged
    if isinstance(config, dict):
        return {k: deep_copy(v) for k, v in config.items() if v is not None}
    return deep_copy(config)


def _merge_keyed(
    field: str, live: list[Any], config: list[Any], rules: ListRules
) -> list[Any] | None:
    """An associative list's items merged by key; None when an item has no usable key (the
    list is then replaced, as an atomic one)."""
    out = list(live)
    index: dict[str, int] = {}
    for i, item in enumerate(live):
        key = fieldcompare.item_key(field, item, rules)
        if key is None:
            return None
        index[key] = i
    for item in config:
        key = fieldcompare.item_key(field, item, rules)
        if key is None:
            return None
        if key in index:
            out[index[key]] = merge_applied(out[index[key]], item, "", rules)
        else:
            index[key] = len(out)
            out.append(deep_copy(item))
    return out


# ---------------------------------------------------------------- removing


def remove_fields(
    value: Any, fields: FieldSet, keep: FieldSet, field: str = "", rules: ListRules = BUILTIN_RULES
) -> Any:
    """``value`` without the member paths of ``fields`` — but a member under which ``keep``
    (what other managers own) has something stays, and only its own removable parts go."""
    if isinstance(value, dict):
        out = dict(value)
        for element, node in fields.items():
            if not element.startswith("f:") or element[2:] not in out:
                continue
            name = element[2:]
            kept = keep.get(element)
            member = not node or "." in node
            if member and kept is None:
                del out[name]
            elif node:
                out[name] = remove_fields(out[name], node, kept or {}, name, rules)
        return out
    if isinstance(value, list):
        out_list: list[Any] = []
        for item in value:
            if field in rules.set_lists:
                key: str | None = "v:" + _json(item)
            else:
                key = fieldcompare.item_key(field, item, rules)
            node = fields.get(key) if key is not None else None
            if node is None:
                out_list.append(item)
                continue
            kept = keep.get(key) if key is not None else None
            if (not node or "." in node) and kept is None:
                continue
            out_list.append(remove_fields(item, node, kept or {}, "", rules))
        return out_list
    return value


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


# ---------------------------------------------------------------- conflicts


def _print_manager(entry: dict[str, Any]) -> str:
    """kube's printManager for a conflict: the name, its subresource, and for an Update the
    apiVersion it wrote with."""
    shown = '"' + str(entry.get("manager") or "") + '"'
    if entry.get("subresource"):
        shown += f' with subresource "{entry["subresource"]}"'
    if entry.get("operation") != APPLY:
        shown += f" using {entry.get('apiVersion') or ''}"
    return shown


def conflict_error(conflicts: list[tuple[dict[str, Any], list[str]]]) -> errors.APIError:
    """kube's NewConflictError: 409 Conflict, one FieldManagerConflict cause per field."""
    causes: list[Cause] = []
    for entry, fields in conflicts:
        for path in fields:
            causes.append(
                {
                    "reason": "FieldManagerConflict",
                    "message": f"conflict with {_print_manager(entry)}",
                    "field": path,
                }
            )
    if len(causes) == 1:
        only = causes[0]
        message = f"Apply failed with 1 conflict: {only['message']}: {only['field']}"
    else:
        lines: list[str] = []
        for entry, fields in sorted(conflicts, key=lambda c: _print_manager(c[0])):
            lines.append(f"conflicts with {_print_manager(entry)}:")
            lines.extend(f"- {path}" for path in fields)
        message = f"Apply failed with {len(causes)} conflicts: " + "\n".join(lines)
    return errors.APIError(409, "Conflict", message, {"causes": causes})


# ---------------------------------------------------------------- the request


def _is_applier(entry: dict[str, Any], manager: str, subresource: str) -> bool:
    return (
        entry.get("manager") == manager
        and entry.get("operation") == APPLY
        and (entry.get("subresource") or "") == subresource
    )


def _check_config(res: Resource, name: str, namespace: str | None, config: Any) -> Obj:
    if not isinstance(config, dict):
        raise errors.bad_request("the body of an apply patch must be an object (YAML or JSON)")
    kind, api_version = config.get("kind"), config.get("apiVersion")
    if api_version != res.api_version:  # kube's structured-merge manager's words
        raise errors.bad_request(
            "Incorrect version specified in apply patch. Specified patch version: "
            f"{api_version or ''}, expected: {res.api_version}"
        )
    if not kind:
        raise errors.bad_request("Object 'Kind' is missing in the apply patch")
    if kind != res.kind:
        raise errors.bad_request(
            f"the kind in the body ({kind}) does not match the kind of the requested resource "
            f"({res.kind})"
        )
    meta = config.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    meta = meta or {}
    if meta.get("name") and meta["name"] != name:
        raise errors.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
        )
    if res.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if "managedFields" in meta:
        raise errors.bad_request("metadata.managedFields must be nil")
    return config


def apply(
    store: Store,
    res: Resource,
    namespace: str | None,
    name: str,
    config: Any,
    *,
    manager: str,
    force: bool,
    subresource: str = "",
    field_validation: str | None = None,
    pruned: list[str] | None = None,
) -> tuple[Obj, bool]:
    """Server-side apply ``config`` as ``manager``. Returns (the stored object, created?)."""
    config = deep_copy(_check_config(res, name, namespace, config))
    dropped = res.strategy.prune(res.version, config, field_validation)
    if pruned is not None:
        pruned.extend(dropped)
    if subresource == "status":
        config = {k: v for k, v in config.items() if k in ("apiVersion", "kind", "status")}
        config["metadata"] = {"name": name}
        drop = "spec"
    else:
        drop = "status" if res.has_status else ""
        if drop:
            config.pop(drop, None)
    config.setdefault("metadata", {})["name"] = name
    now = rfc3339(store.clock.wall_ns())
    rules = listrules.rules_of(res)
    applied = fieldcompare.applied_fields(config, drop, rules)
    live = store.peek(res, namespace, name)
    ns_key = namespace if res.namespaced and namespace else ""
    if live is None:
        if subresource:
            raise errors.not_found(res.plural, name, res.group)
        first = (
            [managedfields.new_entry(manager, APPLY, res.api_version, subresource, now, applied)]
            if applied
            else []
        )
        with managedfields.preset_entries(ns_key, name, first):
            return store.create(res, config, namespace, manager=manager), True
    entries: list[dict[str, Any]] = list(live["metadata"].get("managedFields") or [])
    last: FieldSet = {}
    last_time = now
    others: list[dict[str, Any]] = []
    for entry in entries:
        if _is_applier(entry, manager, subresource):
            last = entry.get("fieldsV1") or {}
            last_time = str(entry.get("time") or now)
        else:
            others.append(entry)
    merged = merge_applied(live, config, "", rules)
    stale = fieldset.difference(last, applied)
    if stale:
        owned: FieldSet = {}
        for entry in others:
            owned = fieldset.union(owned, entry.get("fieldsV1") or {})
        merged = remove_fields(merged, stale, owned, "", rules)
    changed, removed = fieldcompare.changed_fields(live, merged, drop, rules)
    conflicts: list[tuple[dict[str, Any], list[str]]] = []
    left: list[dict[str, Any]] = []
    touched = fieldset.union(changed, removed)
    for entry in others:
        fields = entry.get("fieldsV1") or {}
        clash = fieldset.intersection(fields, changed)
        if clash:
            conflicts.append((entry, list(fieldset.paths(clash))))
        rest = fieldset.difference(fields, touched)
        if rest:
            left.append(entry if rest is fields else {**entry, "fieldsV1": rest})
    if conflicts and not force:
        raise conflict_error(conflicts)
    if not changed and not removed:
        now = last_time  # a no-op apply keeps its entry's time (kube renews it on a change)
    if applied:
        left.append(
            managedfields.new_entry(manager, APPLY, res.api_version, subresource, now, applied)
        )
    left.sort(key=managedfields.entry_order)
    # No resourceVersion in the configuration: no precondition (the live one is current).
    merged["metadata"].setdefault("resourceVersion", live["metadata"]["resourceVersion"])
    merged["metadata"].pop("managedFields", None)
    with managedfields.preset_entries(ns_key, name, left):
        if subresource == "status":
            return store.update_status(res, merged, namespace, manager=manager), False
        return store.update(res, merged, namespace, manager=manager), False
