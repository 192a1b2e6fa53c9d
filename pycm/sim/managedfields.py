"""``metadata.managedFields`` as kube-apiserver's field manager keeps them for non-apply writes.

Every create, update and patch (of the object or its ``status`` / ``scale`` subresource) gives
its writer an entry ``{manager, operation: Update, apiVersion, time, fieldsType: FieldsV1,
fieldsV1, subresource}``. What the entry owns is a *field set* in FieldsV1 form
(:mod:`pycm.sim.fieldset`): the fields the write changed (:mod:`pycm.sim.fieldcompare`).

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
(:mod:`pycm.sim.listrules`: ``LIST_KEYS``, ``SET_LISTS``, ``ATOMIC_MAPS``, ``EMPTY_MAPS``; any
other list is atomic; a custom resource's from its schema's markers, by field name too), not
from each path of the OpenAPI schema; a null is taken for absent; which structs a Go zero value
already holds (so a write that fills them does not own the struct itself, no ``.``) is the path
table ``ZERO_PRESENT``; fields the emulator's defaulting sets belong to the writer
(kube's decode-time defaults do; its strategies' PrepareForCreate fields, such as a namespace's
``spec.finalizers``, do not); kube's cap of ten Update entries (older ones folded into
``ancient-changes``) is not applied. Server-side apply (:mod:`pycm.sim.apply`) builds its
``Apply`` entries and conflicts on the same set algebra (``intersection``, ``paths``,
``applied_fields``); its entries reach the store through :func:`preset_entries`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from pycm.sim import errors
from pycm.sim.errors import Cause
from pycm.sim.fieldcompare import changed_fields, created_fields, view
from pycm.sim.fieldset import MEMBER, FieldSet, difference, sorted_set, union
from pycm.sim.listrules import BUILTIN_RULES, ListRules, rules_of
from pycm.sim.objects import Obj
from pycm.sim.resources import Resource
from pycm.sim.validation import invalid_value

__all__ = [
    "APPLY",
    "FIELDS_V1",
    "UNKNOWN_MANAGER",
    "Entry",
    "entry_order",
    "field_manager_causes",
    "incoming_entries",
    "managed_fields_causes",
    "manager_from_user_agent",
    "new_entry",
    "preset_entries",
    "record",
    "record_write",
    "updated_entries",
]

Entry = dict[str, Any]

UNKNOWN_MANAGER = "unknown"  # kube's buildManagerInfo: the manager of a write that names none
UPDATE = "Update"
APPLY = "Apply"
FIELDS_V1 = "FieldsV1"
MAX_MANAGER_BYTES = 128  # validation.FieldManagerMaxLength
MAX_SUBRESOURCE_BYTES = 256  # validation.MaxSubresourceNameLength
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


def new_entry(
    manager: str, operation: str, api_version: str, subresource: str, time: str, fields: FieldSet
) -> Entry:
    """One managedFields entry (Update here; Apply from :mod:`pycm.sim.apply`)."""
    entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": time,
        "fieldsType": FIELDS_V1,
        "fieldsV1": fields,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def _entry(manager: str, api_version: str, subresource: str, time: str, fields: FieldSet) -> Entry:
    return new_entry(manager or UNKNOWN_MANAGER, UPDATE, api_version, subresource, time, fields)


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
        fields = sorted_set(union(own, changed)) if own else changed
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
        if key == MEMBER:
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
            changed = created_fields(orjson.dumps(view(new, "status")), rules)
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


def record(
    res: Resource,
    old: Obj | None,
    new: Obj,
    manager: str,
    subresource: str,
    time: str,
    *,
    trust_sent: bool,
) -> None:
    """:func:`record_write` for a write of ``res``: 422 Invalid for invalid entries a client
    sent (``new`` then unchanged)."""
    causes = record_write(
        old,
        new,
        manager=manager,
        api_version=res.api_version,
        subresource=subresource,
        time=time,
        status_reset=res.has_status,
        trust_sent=trust_sent,
        rules=rules_of(res),
    )
    if causes:
        name = str(new["metadata"].get("name") or "")
        raise errors.invalid(res.kind, name, causes, res.group)
