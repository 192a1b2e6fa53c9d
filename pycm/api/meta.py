"""Typed accessors over an object's ``metadata`` (objects are plain dicts, never model classes).

Every accessor reads; none mutates. A missing field reads as its zero value (``""``, ``0``, an
empty mapping or list), as Go's ObjectMeta getters do. Helpers that change an object return a
copy (:func:`with_labels`, :func:`with_annotations`).

Keys follow client-go's ``MetaNamespaceKeyFunc``: ``"namespace/name"`` for namespaced objects,
``"name"`` for cluster-scoped ones.
"""

import datetime as _dt
from collections.abc import Mapping
from typing import Any, NewType, cast

__all__ = [
    "UID",
    "Key",
    "Obj",
    "ResourceVersion",
    "annotations",
    "controller_ref",
    "creation_timestamp",
    "deletion_timestamp",
    "format_time",
    "generation",
    "key",
    "key_of",
    "labels",
    "metadata",
    "name",
    "namespace",
    "owner_references",
    "parse_time",
    "resource_version",
    "split_key",
    "time_from_unix_ns",
    "uid",
    "with_annotations",
    "with_labels",
]

Obj = dict[str, Any]
"""A Kubernetes object as decoded from JSON."""

Key = NewType("Key", str)
"""A cache key: ``"namespace/name"`` or ``"name"``."""

UID = NewType("UID", str)
ResourceVersion = NewType("ResourceVersion", str)

_EMPTY: Mapping[str, Any] = {}


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's metadata mapping (an empty one if absent)."""
    meta = obj.get("metadata")
    return cast("Mapping[str, Any]", meta) if isinstance(meta, Mapping) else _EMPTY


def name(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("name") or "")


def namespace(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("namespace") or "")


def uid(obj: Mapping[str, Any]) -> UID:
    return UID(str(metadata(obj).get("uid") or ""))


def resource_version(obj: Mapping[str, Any]) -> ResourceVersion:
    return ResourceVersion(str(metadata(obj).get("resourceVersion") or ""))


def generation(obj: Mapping[str, Any]) -> int:
    return int(metadata(obj).get("generation") or 0)


def labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    value = metadata(obj).get("labels")
    return cast("Mapping[str, str]", value) if isinstance(value, Mapping) else _EMPTY


def annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    value = metadata(obj).get("annotations")
    return cast("Mapping[str, str]", value) if isinstance(value, Mapping) else _EMPTY


def owner_references(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    value = metadata(obj).get("ownerReferences")
    return list(value) if isinstance(value, list) else []


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference with ``controller: true``, if any (metav1.GetControllerOf)."""
    for ref in owner_references(obj):
        if ref.get("controller") is True:
            return ref
    return None


def creation_timestamp(obj: Mapping[str, Any]) -> _dt.datetime | None:
    value = metadata(obj).get("creationTimestamp")
    return parse_time(value) if isinstance(value, str) and value else None


def deletion_timestamp(obj: Mapping[str, Any]) -> _dt.datetime | None:
    """When deletion was requested, or None while the object is not being deleted."""
    value = metadata(obj).get("deletionTimestamp")
    return parse_time(value) if isinstance(value, str) and value else None


def key(obj: Mapping[str, Any]) -> Key:
    """client-go's MetaNamespaceKeyFunc: ``"ns/name"``, or ``"name"`` when cluster-scoped."""
    meta = metadata(obj)
    ns = meta.get("namespace")
    return Key(f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", "")))


def key_of(ns: str, obj_name: str) -> Key:
    return Key(f"{ns}/{obj_name}" if ns else obj_name)


def split_key(k: str) -> tuple[str, str]:
    """``"ns/name"`` → ``("ns", "name")``; ``"name"`` → ``("", "name")``.

    Raises ValueError for a key with more than one ``/`` or an empty name (SplitMetaNamespaceKey).
    """
    parts = k.split("/")
    if len(parts) == 1 and parts[0]:
        return "", parts[0]
    if len(parts) == 2 and parts[1]:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {k!r}")


def parse_time(value: str) -> _dt.datetime:
    """Parse an RFC 3339 timestamp (``2024-01-02T03:04:05Z``, fractional seconds and offsets
    accepted) into an aware UTC datetime. Raises ValueError when it does not parse."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an RFC 3339 time: {value!r}") from None
    if parsed.tzinfo is None or "T" not in text.upper():
        raise ValueError(f"not an RFC 3339 time (needs a date, a time and a zone): {value!r}")
    return parsed.astimezone(_dt.UTC)


def format_time(when: _dt.datetime, *, micro: bool = False) -> str:
    """Format as metav1.Time does (``2024-01-02T03:04:05Z``, seconds precision), or as
    metav1.MicroTime (``...05.123456Z``) with ``micro``. Naive datetimes are taken as UTC."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    utc = when.astimezone(_dt.UTC)
    if micro:
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def time_from_unix_ns(ns: int) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.UTC)


def _with_meta_map(obj: Mapping[str, Any], field: str, values: Mapping[str, str]) -> Obj:
    out = dict(obj)
    meta = dict(metadata(obj))
    meta[field] = dict(values)
    out["metadata"] = meta
    return out


def with_labels(obj: Mapping[str, Any], values: Mapping[str, str]) -> Obj:
    """A shallow copy of ``obj`` whose labels are ``values`` (``obj`` is left untouched)."""
    return _with_meta_map(obj, "labels", values)


def with_annotations(obj: Mapping[str, Any], values: Mapping[str, str]) -> Obj:
    """A shallow copy of ``obj`` whose annotations are ``values`` (``obj`` is left untouched)."""
    return _with_meta_map(obj, "annotations", values)
