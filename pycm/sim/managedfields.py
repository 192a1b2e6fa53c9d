"""``metadata.managedFields`` as kube-apiserver's field manager keeps them for non-apply writes.

Every create, update and patch (of the object or its ``status`` / ``scale`` subresource) gives
its writer an entry ``{manager, operation: Update, apiVersion, time, fieldsType: FieldsV1,
fieldsV1, subresource}``. What the entry owns is a *field set* in FieldsV1 form — a trie whose
keys are ``f:<field>`` (a struct field or map key), ``k:{"name":"web"}`` (an item of an
associative list, by its key fields), ``v:<json>`` (an item of a set) and ``.`` (the node itself
is a member); a key mapping to ``{}`` is a member with no children. Sets are never mutated: the
operations here return new tries and share unchanged sub-tries.

The rules (structured-merge-diff's ``Updater.Update`` with kube's field-manager wrappers):

- The writer's fields are those the write added or changed, compared old against new (a create
  against an empty object); fields it removed leave every entry. Those it added or changed move
  to it from every other entry (an Update forces: there are no conflicts). Its entry is keyed by
  (manager, operation, apiVersion, subresource); a second write merges into it (union) and
  renews its time — only if the write took a field. Entries left empty are dropped; the list is
  sorted by operation, time, manager, apiVersion, subresource.
- Never owned: apiVersion, kind and metadata's name, namespace, uid, resourceVersion,
  generation, creationTimestamp, selfLink and managedFields. A write to the main resource of a
  kind with a status subresource owns nothing under status (kube's reset fields); a write to
  ``status`` owns nothing under spec.
- The entries a request body carries (create, update, patch of the main resource; a
  subresource write always starts from the stored ones): an empty list, or one empty entry,
  resets them; a list kube's decoder cannot read (an operation other than Apply/Update, no
  apiVersion, a fieldsType other than FieldsV1, a malformed fieldsV1) is ignored in favour of
  the stored ones; one it reads but validation refuses (a manager over 128 bytes or with an
  unprintable character, a subresource over 256 bytes) is 422 Invalid.
- The manager is the ``fieldManager`` parameter, else the User-Agent up to its first ``/``
  (unprintable characters dropped, at most 128 bytes), else ``unknown``.

Simplified (named where they apply): list and map types come from field names
(:data:`LIST_KEYS`, :data:`SET_LISTS`, :data:`ATOMIC_MAPS`, :data:`EMPTY_MAPS`; any other list
is atomic; a custom resource's from its schema's markers, by field name too:
:mod:`pycm.sim.listrules`), not from each path of the OpenAPI schema; a null is taken for
absent; which structs a Go zero value already holds (so a write that fills them does not own
the struct itself, no ``.``) is the path table :data:`ZERO_PRESENT`; fields the emulator's
defaulting sets belong to the writer
(kube's decode-time defaults do; its strategies' PrepareForCreate fields, such as a namespace's
``spec.finalizers``, do not); kube's cap of ten Update entries (older ones folded into
``ancient-changes``) is not applied. Server-side apply (:mod:`pycm.sim.apply`) builds its
``Apply`` entries and conflicts on this set algebra (:func:`intersection`, :func:`paths`,
:func:`applied_fields`); its entries reach the store through :func:`preset_entries`.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from pycm.sim.errors import Cause
from pycm.sim.listrules import ListRules, rules_for
from pycm.sim.objects import Obj
from pycm.sim.validation import invalid_value

__all__ = [
    "APPLY",
    "BUILTIN_RULES",
    "UNKNOWN_MANAGER",
    "FieldSet",
    "applied_fields",
    "changed_fields",
    "difference",
    "entry_order",
    "field_manager_causes",
    "incoming_entries",
    "intersection",
    "item_key",
    "managed_fields_causes",
    "manager_from_user_agent",
    "paths",
    "preset_entries",
    "record_write",
    "rules_of",
    "union",
    "updated_entries",
]

FieldSet = dict[str, Any]  # FieldsV1: {"f:spec": {"f:replicas": {}}}; never mutated
Entry = dict[str, Any]

UNKNOWN_MANAGER = "unknown"  # kube's buildManagerInfo: the manager of a write that names none
UPDATE = "Update"
APPLY = "Apply"
FIELDS_V1 = "FieldsV1"
MAX_MANAGER_BYTES = 128  # validation.FieldManagerMaxLength
MAX_SUBRESOURCE_BYTES = 256  # validation.MaxSubresourceNameLength
_MEMBER = "."

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
    built-in kinds' (see :mod:`pycm.sim.listrules`)."""
    return rules_for(resource, BUILTIN_RULES)


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


# ---------------------------------------------------------------- the manager


def manager_from_user_agent(user_agent: str) -> str:
    """kube's prefixFromUserAgent: up to the first ``/``, printable, at most 128 bytes."""
    out: list[str] = []
    size = 0
    for ch in user_agent.split("/", 1)[0]:
        if not ch.isprintable():
            continue
        size += len(ch.encode())
        if size > MAX_MANAGER_BYTES:
            break
        out.append(ch)
    return "".join(out)


def field_manager_causes(value: str, field: str = "fieldManager") -> list[Cause]:
    """kube's ValidateFieldManager: at most 128 bytes, printable characters only."""
    causes: list[Cause] = []
    if len(value.encode()) > MAX_MANAGER_BYTES:
        causes.append(_too_long(field, MAX_MANAGER_BYTES))
    for i, ch in enumerate(value):
        if not ch.isprintable():
            why = f"invalid character U+{ord(ch):04X} (at position {i})"
            causes.append(invalid_value(field, value, why))
    return causes


def _too_long(field: str, limit: int) -> Cause:
    return {
        "reason": "FieldValueTooLong",
        "message": f"Too long: may not be more than {limit} bytes",
        "field": field,
    }


# ---------------------------------------------------------------- field sets
#
# A set is the children dict of its root (``{}`` is the empty set). Below the root a node is
# ``{}`` (a member with no children), ``{".": {}, ...children}`` (a member with children) or
# ``{...children}`` (only a prefix of members).


def _is_member(node: FieldSet) -> bool:
    return not node or _MEMBER in node


def _children_of(node: FieldSet) -> FieldSet:
    if _MEMBER not in node:
        return node
    return {k: v for k, v in node.items() if k != _MEMBER}


def _build(member: bool, children: FieldSet) -> FieldSet | None:
    if not children:
        return {} if member else None
    return {_MEMBER: {}, **children} if member else children


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
            member = _is_member(mine) or _is_member(sub)
            out[key] = _build(member, union(_children_of(mine), _children_of(sub))) or {}
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
        member = _is_member(mine) and not _is_member(other)
        left = _build(member, difference(_children_of(mine), _children_of(other)))
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
        if other is None or key == _MEMBER:
            continue
        member = _is_member(mine) and _is_member(other)
        node = _build(member, intersection(_children_of(mine), _children_of(other)))
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
    keys = sorted(k for k in fields if k != _MEMBER)
    for key in keys:
        if _is_member(fields[key]):
            yield prefix + _element(key)
    for key in keys:
        children = _children_of(fields[key])
        if children:
            yield from paths(children, prefix + _element(key))


def _sorted(node: FieldSet) -> FieldSet:
    """``node`` with ``.`` first and the rest in key order, as kube serializes a set."""
    keys = sorted(k for k in node if k != _MEMBER)
    out: FieldSet = {_MEMBER: {}} if _MEMBER in node else {}
    for key in keys:
        sub = node[key]
        out[key] = _sorted(sub) if sub else {}
    return out


# ---------------------------------------------------------------- comparing objects


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
    """An empty list, or an empty map of :data:`EMPTY_MAPS`: Go's ``omitempty`` drops it, so
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

    ``path`` is the field path from the root while it can be in :data:`ZERO_PRESENT` (None
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
    for key, n in new_children.items():
        o = old_children.get(key, _ABSENT)
        if o is n:
            continue
        named = key[0] == "f"
        sub_path = (*path, key[2:]) if path is not None and named else None
        c, r = _compare(o, n, key[2:] if named else "", sub_path, rules)
        if c is not None:
            changed[key] = c
        if r is not None:
            removed[key] = r
    for key, o in old_children.items():
        if key in new_children:
            continue
        named = key[0] == "f"
        sub_path = (*path, key[2:]) if path is not None and named else None
        _, r = _compare(o, _ABSENT, key[2:] if named else "", sub_path, rules)
        if r is not None:
            removed[key] = r
    return (
        _build(old is _ABSENT and not zero, changed),
        _build(new is _ABSENT and not zero, removed),
    )


def _view(obj: Obj | None, drop: str) -> Obj:
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
        return _created_fields(orjson.dumps(_view(new, drop)), rules), {}
    changed, removed = _compare(_view(old, drop), _view(new, drop), "", (), rules)
    return _sorted(changed) if changed else {}, removed or {}


@functools.lru_cache(maxsize=256)
def _created_fields(view: bytes, rules: ListRules = BUILTIN_RULES) -> FieldSet:
    changed, _ = _compare({}, orjson.loads(view), "", (), rules)  # the root is never a member
    return _sorted(changed) if changed else {}


def applied_fields(config: Obj, drop: str = "", rules: ListRules = BUILTIN_RULES) -> FieldSet:
    """The fields a server-side apply's configuration sets (its manager's set), without what
    no entry owns and the top-level field ``drop`` (a reset one). As structured-merge-diff's
    ToFieldSet: leaves, empty maps and lists' items are members; a map or struct with fields
    is only their prefix (an Apply entry has ``f:data: {f:key: {}}``, an Update's has a ``.``)."""
    return _prefixes_only(_created_fields(orjson.dumps(_view(config, drop)), rules))


def _prefixes_only(node: FieldSet) -> FieldSet:
    out: FieldSet = {}
    for key, sub in node.items():
        if not sub:
            out[key] = sub
            continue
        children = _prefixes_only(_children_of(sub))
        member = key[0] != "f" and _MEMBER in sub  # a list item stays a member
        out[key] = _build(member, children) or {}
    return out


# ---------------------------------------------------------------- entries


def _same_writer(entry: Entry, manager: str, api_version: str, subresource: str) -> bool:
    return (
        entry.get("manager") == manager
        and entry.get("operation") == UPDATE
        and entry.get("apiVersion") == api_version
        and (entry.get("subresource") or "") == subresource
    )


def entry_order(entry: Entry) -> tuple[str, str, str, str, str]:
    return (
        str(entry.get("operation") or ""),
        str(entry.get("time") or ""),
        str(entry.get("manager") or ""),
        str(entry.get("apiVersion") or ""),
        str(entry.get("subresource") or ""),
    )


def _entry(manager: str, api_version: str, subresource: str, time: str, fields: FieldSet) -> Entry:
    entry = {
        "manager": manager or UNKNOWN_MANAGER,
        "operation": UPDATE,
        "apiVersion": api_version,
        "time": time,
        "fieldsType": FIELDS_V1,
        "fieldsV1": fields,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def updated_entries(
    entries: list[Entry],
    changed: FieldSet,
    removed: FieldSet,
    *,
    manager: str,
    api_version: str,
    subresource: str,
    time: str,
) -> list[Entry]:
    """``entries`` after a write by ``manager`` (an Update) that changed ``changed`` and removed
    ``removed``; unchanged entries are the same dicts."""
    manager = manager or UNKNOWN_MANAGER
    touched = union(changed, removed)
    out: list[Entry] = []
    previous: Entry | None = None
    for entry in entries:
        if _same_writer(entry, manager, api_version, subresource):
            previous = entry
            continue
        if touched:
            fields = entry.get("fieldsV1") or {}
            left = difference(fields, touched)
            if left is not fields:
                if not left:
                    continue
                entry = {**entry, "fieldsV1": left}
        out.append(entry)
    own: FieldSet = (previous.get("fieldsV1") or {}) if previous is not None else {}
    own = difference(own, removed)
    if changed:
        fields = _sorted(union(own, changed)) if own else changed
        out.append(_entry(manager, api_version, subresource, time, fields))
    elif own and previous is not None:
        out.append(previous if own is previous.get("fieldsV1") else {**previous, "fieldsV1": own})
    out.sort(key=entry_order)
    return out


# ---------------------------------------------------------------- entries a client sends


def _valid_fields(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    for key, sub in node.items():
        if key == _MEMBER:
            if sub != {}:
                return False
            continue
        if not isinstance(key, str) or key[:2] not in ("f:", "k:", "v:", "i:"):
            return False
        if key[0] in "kv":
            try:
                orjson.loads(key[2:])
            except orjson.JSONDecodeError:
                return False
        if not _valid_fields(sub):
            return False
    return True


def _decodable(entry: Any) -> bool:
    """Whether kube's DecodeManagedFields reads ``entry``."""
    return (
        isinstance(entry, dict)
        and entry.get("operation") in (APPLY, UPDATE)
        and isinstance(entry.get("apiVersion"), str)
        and bool(entry["apiVersion"])
        and entry.get("fieldsType") == FIELDS_V1
        and _valid_fields(entry.get("fieldsV1"))
        and all(isinstance(entry.get(k, ""), str) for k in ("manager", "time", "subresource"))
    )


def incoming_entries(sent: Any, live: list[Entry]) -> list[Entry]:
    """The entries a write to the main resource starts from (kube's decodeManagedFields): an
    empty list or one empty entry resets them; entries that do not decode, or none, leave the
    stored ones (clients unaware of managedFields must not lose them)."""
    if isinstance(sent, list) and (not sent or (len(sent) == 1 and sent[0] == {})):
        return []
    if not isinstance(sent, list) or not all(_decodable(e) for e in sent):
        return live
    return sent


def managed_fields_causes(entries: list[Entry]) -> list[Cause]:
    """kube's ValidateManagedFields on entries a client sent (decodable ones)."""
    causes: list[Cause] = []
    for i, entry in enumerate(entries):
        path = f"metadata.managedFields[{i}]"
        causes.extend(field_manager_causes(entry.get("manager") or "", f"{path}.manager"))
        if len((entry.get("subresource") or "").encode()) > MAX_SUBRESOURCE_BYTES:
            causes.append(_too_long(f"{path}.subresource", MAX_SUBRESOURCE_BYTES))
    return causes


# ---------------------------------------------------------------- entries decided beforehand

# A server-side apply decides its write's entries itself (its own set, conflicts, what others
# lose) before the store writes the object; the store's recording step must then take them as
# they are rather than record the write as an Update. One write, of one named object.
_PRESET: contextvars.ContextVar[tuple[str, str, list[Entry]] | None] = contextvars.ContextVar(
    "pycm_sim_managed_fields_preset", default=None
)


@contextmanager
def preset_entries(namespace: str, name: str, entries: list[Entry]) -> Iterator[None]:
    """Within this block, the next write of ``namespace``/``name`` gets ``entries``."""
    token = _PRESET.set((namespace, name, entries))
    try:
        yield
    finally:
        _PRESET.reset(token)


def _take_preset(new: Obj) -> list[Entry] | None:
    preset = _PRESET.get()
    if preset is None:
        return None
    m = new["metadata"]
    if (m.get("namespace") or "", m.get("name") or "") != preset[:2]:
        return None
    _PRESET.set(None)  # one write only
    return preset[2]


# ---------------------------------------------------------------- one write


def record_write(
    old: Obj | None,
    new: Obj,
    *,
    manager: str,
    api_version: str,
    subresource: str = "",
    time: str,
    status_reset: bool,
    trust_sent: bool = True,
    rules: ListRules = BUILTIN_RULES,
) -> list[Cause]:
    """Set ``new``'s ``metadata.managedFields`` for a write of ``old`` (None: a create) into
    ``new`` by ``manager``. Returns the validation causes of entries the client sent (the write
    must then be refused, 422); ``new`` is changed only when there are none.

    ``rules``: the kind's list and map semantics (:func:`rules_of`). ``status_reset``: the
    kind has a status subresource, so a write to the main resource owns
    nothing under status. ``trust_sent``: ``new`` carries the request's entries (a write to
    the main resource over HTTP); otherwise the stored ones are the base (a subresource, the
    emulator's own writes)."""
    m = new["metadata"]
    preset = _take_preset(new)
    if preset is not None:
        m.pop("managedFields", None)
        if preset:
            m["managedFields"] = preset
        return []
    if old is None and "managedFields" not in m:  # a plain create: one entry, kept short
        if subresource != "status" and status_reset:
            changed = _created_fields(orjson.dumps(_view(new, "status")), rules)
        else:
            drop = "spec" if subresource == "status" else ""
            changed = changed_fields(None, new, drop, rules)[0]
        if changed:
            m["managedFields"] = [_entry(manager, api_version, subresource, time, changed)]
        return []
    live: list[Entry] = (old or {}).get("metadata", {}).get("managedFields") or []
    base = live
    if trust_sent and not subresource:
        base = incoming_entries(m.get("managedFields"), live)
        if base is not live:
            causes = managed_fields_causes(base)
            if causes:
                return causes
    drop = "spec" if subresource == "status" else "status" if status_reset else ""
    changed, removed = changed_fields(old, new, drop, rules)
    entries = base
    if not base:  # a create's (or a reset's) one entry: the common case, kept short
        entries = [_entry(manager, api_version, subresource, time, changed)] if changed else []
    elif changed or removed:
        entries = updated_entries(
            base,
            changed,
            removed,
            manager=manager,
            api_version=api_version,
            subresource=subresource,
            time=time,
        )
    elif base is not live:
        entries = sorted(base, key=entry_order)
    m.pop("managedFields", None)
    if entries:
        m["managedFields"] = entries
    return []
