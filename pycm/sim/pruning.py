"""Unknown fields, dropped as kube-apiserver's typed decoding drops them.

kube decodes a body into the Go type of its resource: a field the type does not declare is
lost ("pruned"), at any depth. How the client hears of it is the ``fieldValidation`` query
parameter (the server default since 1.27 is ``Warn``):

- ``Warn`` (or unset): dropped, and each named in a ``Warning: 299 - "unknown field \\"x\\""``
  response header;
- ``Ignore``: dropped silently;
- ``Strict``: 400 BadRequest ``Pod in version "v1" cannot be handled as a Pod: strict decoding
  error: unknown field "x", unknown field "y"`` (every one listed); for a patch, 422 Invalid
  ``patch: Invalid value: "<the patch>": strict decoding error: …``.

A field is named by its path as kube names it, a list item by its index
(``spec.template.spec.containers[0].imagePullPolicyy``), in the order the body holds them.

The schemas are :mod:`pycm.sim.schemas`: every struct a client commonly writes is declared
there completely (metadata and owner references, pod specs and templates, containers and their
probes, env, resources, mounts and security context, volumes' names, tolerations, a workload's
strategy, selector and status, a Lease's spec). What it leaves opaque (a volume source, an
affinity term, a node's spec, an event's involvedObject) is kept as it is, unchecked; so are
the keys of maps (labels, annotations, resource quantities, a ConfigMap's data). Only the
declared structs are walked, in place and without copying; a kind with no schema is not pruned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from pycm.sim import errors
from pycm.sim.schemas import KINDS, ListOf, Struct

__all__ = ["FIELD_VALIDATION", "prune_unknown_fields", "warning_headers"]

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


@dataclass(frozen=True, slots=True)
class _Check:
    """A struct compiled for the fast check: its field names, and those of its fields that hold
    a struct (``is_list``: a list of them) with the struct's own check."""

    known: frozenset[str]
    children: tuple[tuple[str, _Check, bool], ...]


def _compile(struct: Struct, memo: dict[int, _Check]) -> _Check:
    done = memo.get(id(struct))
    if done is None:
        children: list[tuple[str, _Check, bool]] = []
        for key, sub in struct.items():
            if isinstance(sub, ListOf):
                children.append((key, _compile(sub.item, memo), True))
            elif isinstance(sub, dict):
                children.append((key, _compile(sub, memo), False))
        done = memo[id(struct)] = _Check(frozenset(struct), tuple(children))
    return done


def _compile_kinds() -> dict[str, _Check]:
    memo: dict[int, _Check] = {}  # a struct shared by several fields is compiled once
    return {kind: _compile(struct, memo) for kind, struct in KINDS.items()}


_CHECKS = _compile_kinds()


def _clean(obj: dict[str, Any], check: _Check) -> bool:
    """Does ``obj`` hold only declared fields? The fast path for the common, clean body: each
    struct's keys are compared with its fields in C (a set against the dict), and only the
    fields that may hold structs are looked at (a pod: ~30 structs, ~80 such lookups)."""
    if not check.known.issuperset(obj):
        return False
    for key, child, is_list in check.children:
        value = obj.get(key)
        if value is None:
            continue
        if not is_list:
            if isinstance(value, dict) and not _clean(value, child):
                return False
        elif isinstance(value, list):
            if child.children:
                for item in value:
                    if isinstance(item, dict) and not _clean(item, child):
                        return False
            else:  # items of leaves only (ports, mounts, conditions): no call for each
                known = child.known
                for item in value:
                    if isinstance(item, dict) and not known.issuperset(item):
                        return False
    return True


def _prune(obj: dict[str, Any], struct: Struct) -> list[str] | None:
    """Drop from ``obj`` (recursively, as far as ``struct`` declares) the fields ``struct`` does
    not declare; their paths relative to ``obj``, or None for none. Run once :func:`_clean`
    has found something: the paths come in document order (as kube's decoder meets them),
    built bottom-up for what is found only."""
    found: list[str] | None = None
    unknown: list[str] | None = None
    for key, value in obj.items():
        sub = struct.get(key)
        if sub is None:
            if unknown is None:
                unknown = []
            unknown.append(key)
            if found is None:
                found = []
            found.append(key)
        elif isinstance(sub, dict):
            if isinstance(value, dict):
                inner = _prune(value, sub)
                if inner:
                    if found is None:
                        found = []
                    found.extend(f"{key}.{path}" for path in inner)
        elif isinstance(sub, ListOf) and isinstance(value, list):
            item_struct = sub.item
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    inner = _prune(item, item_struct)
                    if inner:
                        if found is None:
                            found = []
                        found.extend(f"{key}[{i}].{path}" for path in inner)
    if unknown:
        for key in unknown:
            del obj[key]
    return found


def prune_unknown_fields(
    kind: str, version: str, body: dict[str, Any], validation: str | None, patch: Any = None
) -> list[str]:
    """Drop the fields of ``body`` (a freshly decoded request body, or a patch's result: changed
    in place) that ``kind`` (served at ``version``) does not declare, as the ``fieldValidation``
    mode says; the fields dropped, by path. 400 for ``Strict`` with any, or for a mode kube does
    not know; for ``Strict`` on the result of ``patch`` (the decoded patch), 422 as kube's patch
    handler answers (its value is the patch as JSON here; kube shows the patched object for a
    JSON or merge patch, Go's rendering of the patch for a strategic one)."""
    mode = validation or "Warn"
    if mode not in FIELD_VALIDATION:
        raise errors.bad_request(
            f'fieldValidation: Unsupported value: "{mode}": supported values: '
            + ", ".join(f'"{m}"' for m in FIELD_VALIDATION)
        )
    check = _CHECKS.get(kind)
    if check is None or _clean(body, check):
        return []
    found = _prune(body, KINDS[kind])
    if not found:
        return []
    if mode == "Strict":
        listed = ", ".join(f'unknown field "{path}"' for path in found)
        if patch is not None:
            shown = orjson.dumps(orjson.dumps(patch).decode()).decode()  # Go's %q of the JSON
            why = f"Invalid value: {shown}: strict decoding error: {listed}"
            cause = {"reason": "FieldValueInvalid", "message": why, "field": "patch"}
            raise errors.invalid("", "", [cause])
        raise errors.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {kind}: '
            f"strict decoding error: {listed}"
        )
    return found if mode == "Warn" else []


def warning_headers(fields: list[str]) -> list[tuple[str, str]]:
    """The ``Warning`` headers kube sends for pruned fields (RFC 7234 code 299)."""
    return [("Warning", f'299 - "unknown field \\"{path}\\""') for path in fields]
