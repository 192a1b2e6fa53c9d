"""The three patch types PATCH accepts.

- ``application/merge-patch+json``: RFC 7386 (``null`` deletes, objects merge, lists replace).
- ``application/strategic-merge-patch+json``: as kubectl uses it for the emulator's kinds:
  lists named in :data:`MERGE_KEYS` merge element-wise by their key (containers by ``name``),
  lists in :data:`MERGE_PRIMITIVES` (finalizers) are unions, other lists replace; the
  directives ``$patch: replace|delete`` (on maps and list elements),
  ``$deleteFromPrimitiveList/<field>`` and ``$retainKeys`` (clear the map's other fields) are
  honoured; ``$setElementOrder/<field>`` is accepted and ignored (new elements are
  appended). The merge key is chosen by field name, not by full schema path — for these kinds
  that is the same thing.
- ``application/json-patch+json``: RFC 6902 (add, remove, replace, move, copy, test).

Patches never mutate their input: they return a new document.
"""

from __future__ import annotations

import copy
from typing import Any

from pycm.sim.errors import APIError, bad_request
from pycm.sim.objects import MAX_DEPTH, nesting_exceeds

__all__ = [
    "JSON_PATCH",
    "MERGE_KEYS",
    "MERGE_PATCH",
    "PATCH_TYPES",
    "STRATEGIC_MERGE_PATCH",
    "apply_patch",
    "json_patch",
    "merge_patch",
    "strategic_merge_patch",
]

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (MERGE_PATCH, STRATEGIC_MERGE_PATCH, JSON_PATCH)

# Field name -> the merge key of its elements (patchStrategy "merge" in the Go types).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "taints": "key",
    "addresses": "type",
}
MERGE_PRIMITIVES = frozenset({"finalizers"})


def _invalid_patch(message: str) -> APIError:
    return APIError(422, "Invalid", f"the server rejected our request due to an error: {message}")


def merge_patch(original: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, Any] = copy.deepcopy(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


_DELETE = object()  # a "$patch: delete" on a map: the map goes away


def strategic_merge_patch(original: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch: the patch must be a JSON object")
    merged = _smp_map(original if isinstance(original, dict) else {}, patch)
    return {} if merged is _DELETE else merged


def _smp_map(original: dict[str, Any], patch: dict[str, Any]) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if not k.startswith("$")}
    if directive is not None:
        raise bad_request(f"strategic merge patch: unknown patch type {directive!r}")
    result = copy.deepcopy(original)
    retain = patch.get("$retainKeys")
    if retain is not None:
        if not isinstance(retain, list):
            raise bad_request("strategic merge patch: $retainKeys must be a list")
        result = {k: v for k, v in result.items() if k in retain}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key == "$retainKeys":
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            merged = _smp_map(current if isinstance(current, dict) else {}, value)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _smp_list(key, result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _smp_list(field: str, original: Any, patch: list[Any]) -> list[Any]:
    base: list[Any] = copy.deepcopy(original) if isinstance(original, list) else []
    if any(isinstance(e, dict) and e.get("$patch") == "replace" for e in patch):
        return [copy.deepcopy(e) for e in patch if not (isinstance(e, dict) and "$patch" in e)]
    if field in MERGE_PRIMITIVES:
        return base + [v for v in patch if v not in base]
    key = MERGE_KEYS.get(field)
    if key is None:
        return [_strip_directives(e) for e in patch]
    for element in patch:
        if not isinstance(element, dict) or key not in element:
            raise bad_request(f"strategic merge patch: element of {field} lacks merge key {key}")
        index = next(
            (i for i, e in enumerate(base) if isinstance(e, dict) and e.get(key) == element[key]),
            None,
        )
        if element.get("$patch") == "delete":
            if index is not None:
                del base[index]
            continue
        if index is None:
            base.append(_strip_directives(element))
        else:
            merged = _smp_map(base[index], element)
            if merged is _DELETE:
                del base[index]
            else:
                base[index] = merged
    return base


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return copy.deepcopy(value)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _invalid_patch(f"json patch: invalid path {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve(doc: Any, parts: list[str], path: str) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise _invalid_patch(f"json patch: path {path!r} does not exist")
    return doc


def _add(doc: Any, parts: list[str], value: Any, path: str) -> Any:
    if not parts:
        return value
    parent = _resolve(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise _invalid_patch(f"json patch: index out of range in {path!r}")
    else:
        raise _invalid_patch(f"json patch: path {path!r} does not exist")
    return doc


def _remove(doc: Any, parts: list[str], path: str) -> Any:
    if not parts:
        raise _invalid_patch("json patch: cannot remove the whole document")
    parent = _resolve(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise _invalid_patch(f"json patch: path {path!r} does not exist")


def json_patch(original: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise bad_request("json patch: the patch must be a JSON array of operations")
    doc = copy.deepcopy(original)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"json patch: malformed operation {op!r}")
        kind, path = op["op"], str(op["path"])
        parts = _pointer(path)
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")), path)
        elif kind == "remove":
            _remove(doc, parts, path)
        elif kind == "replace":
            _resolve(doc, parts, path)
            if parts:
                _remove(doc, parts, path)
            doc = _add(doc, parts, copy.deepcopy(op.get("value")), path)
        elif kind in ("move", "copy"):
            source = str(op.get("from", ""))
            src_parts = _pointer(source)
            if kind == "move":
                value = _remove(doc, src_parts, source)
            else:
                value = copy.deepcopy(_resolve(doc, src_parts, source))
            doc = _add(doc, parts, value, path)
        elif kind == "test":
            if _resolve(doc, parts, path) != op.get("value"):
                raise _invalid_patch(f"json patch: test operation failed at {path!r}")
        else:
            raise bad_request(f"json patch: unknown operation {kind!r}")
    return doc


def apply_patch(content_type: str, original: dict[str, Any], patch: Any) -> Any:
    """Apply ``patch`` of ``content_type`` (parameters ignored) to ``original``."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == MERGE_PATCH:
        return merge_patch(original, patch)
    if media == STRATEGIC_MERGE_PATCH:
        return strategic_merge_patch(original, patch)
    if media == JSON_PATCH:
        patched = json_patch(original, patch)
        # The one patch type whose result can nest deeper than both its inputs (a value added
        # at a deep path): bounded as request bodies are (see objects.MAX_DEPTH).
        if nesting_exceeds(patched):
            raise bad_request(f"json patch: the result exceeded max depth of {MAX_DEPTH}")
        return patched
    raise APIError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(PATCH_TYPES)}",
    )
