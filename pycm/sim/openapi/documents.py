"""The OpenAPI documents and the HTTP answers for ``/openapi/v2`` and ``/openapi/v3``.

- ``GET /openapi/v2``: one Swagger 2.0 document of every served kind with a schema — JSON for
  ``application/json`` (and no Accept), gnostic's protobuf for
  ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` (kubectl's ask) or
  ``...spec.v2.v1.0+protobuf`` (the spelling kube answers with), 406 for anything else.
- ``GET /openapi/v3``: the index kube serves — ``{"paths": {"apis/apps/v1": {"serverRelativeURL":
  "/openapi/v3/apis/apps/v1?hash=<etag>"}}}`` — and ``GET /openapi/v3/<api|apis/group>/<version>``:
  an OpenAPI 3.0 document of that group version's kinds (refs ``#/components/schemas/...``,
  with the definitions they reach; a custom resource's as its CRD gives it, not in the v2
  form). An unknown group version is 404.
- Every answer carries an ``ETag`` (a hash of the document); a request whose ``If-None-Match``
  names it is 304 Not Modified, as kube's handler answers.

A document is rebuilt only when what it is built from changes: the registry's kinds and the
custom resources' served schemas (compared by value on each request — a few thousand bytes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson
from starlette.responses import Response

from pycm.sim import errors
from pycm.sim.discovery import KUBE_VERSION
from pycm.sim.openapi.definitions import (
    GVK_EXTENSION,
    CustomSchema,
    CustomSchemas,
    Definitions,
    build_definitions,
    custom_definitions_v3,
)
from pycm.sim.openapi.gnostic import encode_document
from pycm.sim.resources import Registry

__all__ = ["PROTOBUF_V2", "PROTOBUF_V2_ANSWER", "OpenAPI"]

# What kubectl asks for, and the spelling kube answers with: Go's mime.ParseMediaType (which
# client-go runs on every response's Content-Type) refuses the "@" of the first.
PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTOBUF_V2_ANSWER = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_JSON = "application/json"
_V2_REF = "#/definitions/"
_V3_REF = "#/components/schemas/"


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha512(body).hexdigest().upper() + '"'


def _wanted_v2(accept: str | None) -> str:
    """The v2 encoding an Accept header asks for (kube's: JSON or gnostic protobuf)."""
    if not accept or not accept.strip():
        return _JSON
    for entry in accept.split(","):
        media = entry.split(";", 1)[0].strip().lower()
        if media in (PROTOBUF_V2.lower(), PROTOBUF_V2_ANSWER):
            return PROTOBUF_V2_ANSWER
        if media in (_JSON, "application/*", "*/*"):
            return _JSON
    raise errors.APIError(
        406,
        "NotAcceptable",
        f"only the following media types are accepted: {_JSON}, {PROTOBUF_V2}",
    )


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _reachable(definitions: Definitions, roots: Iterable[str]) -> list[str]:
    """The definitions ``roots`` reference, transitively (roots included), sorted."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in definitions:
            continue
        seen.add(name)
        stack.extend(_refs(definitions[name]))
    return sorted(seen)


def _refs(schema: Any) -> Iterable[str]:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(_V2_REF):
            yield ref[len(_V2_REF) :]
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def _to_v3(schema: Any) -> Any:
    """A v2 schema with its refs pointing at components."""
    if isinstance(schema, dict):
        out = {k: _to_v3(v) for k, v in schema.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith(_V2_REF):
            out["$ref"] = _V3_REF + ref[len(_V2_REF) :]
        return out
    if isinstance(schema, list):
        return [_to_v3(v) for v in schema]
    return schema


class _Built:
    """The documents for one state of the registry and the CRDs, encoded once."""

    def __init__(self, registry: Registry, custom: list[CustomSchema]) -> None:
        definitions = build_definitions(registry, custom)
        v2 = {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": KUBE_VERSION["gitVersion"]},
            "paths": {},
            "definitions": definitions,
        }
        self.v2_json = orjson.dumps(v2)
        self.v2_protobuf = encode_document(v2)
        self.v2_etag = _etag(self.v2_json)
        # v3: one document per group version, with the definitions its kinds reach.
        roots: dict[str, list[str]] = {}
        for name, schema in definitions.items():
            for gvk in schema.get(GVK_EXTENSION) or ():
                roots.setdefault(_gv_path(gvk["group"], gvk["version"]), []).append(name)
        for group, version in registry.group_versions():
            roots.setdefault(_gv_path(group, version), [])
        v3_custom = custom_definitions_v3(custom)
        self.v3: dict[str, tuple[bytes, str]] = {}
        for path, names in sorted(roots.items()):
            components = {
                n: _to_v3(v3_custom.get(n, definitions[n])) for n in _reachable(definitions, names)
            }
            body = orjson.dumps(
                {
                    "openapi": "3.0.0",
                    "info": {"title": "Kubernetes", "version": KUBE_VERSION["gitVersion"]},
                    "paths": {},
                    "components": {"schemas": components},
                }
            )
            self.v3[path] = (body, _etag(body))
        self.v3_index = orjson.dumps(
            {
                "paths": {
                    path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={etag.strip(chr(34))}"}
                    for path, (_, etag) in self.v3.items()
                }
            }
        )


def _custom_key(custom: list[CustomSchema]) -> bytes:
    return orjson.dumps(
        [(s.group, s.version, s.kind, s.schema) for s in custom], option=orjson.OPT_SORT_KEYS
    )


class OpenAPI:
    """Serves the documents of ``registry`` and of ``custom_schemas`` (the CRD registry's
    served versions; none by default)."""

    def __init__(self, registry: Registry, custom_schemas: CustomSchemas | None = None) -> None:
        self._registry = registry
        self._custom = custom_schemas
        self._key: tuple[tuple[Any, ...], bytes] | None = None
        self._built: _Built | None = None

    def _current(self) -> _Built:
        custom = list(self._custom()) if self._custom is not None else []
        kinds = tuple(
            (r.group, r.version, r.kind, r.stored) for r in self._registry.resources.values()
        )
        key = (kinds, _custom_key(custom))
        if self._built is None or key != self._key:
            self._built = _Built(self._registry, custom)
            self._key = key
        return self._built

    def respond(self, path: str, accept: str | None, if_none_match: str | None) -> Response:
        """The answer to a GET of ``path`` (``/openapi/...``, without a trailing slash)."""
        built = self._current()
        if path == "/openapi/v2":
            media = _wanted_v2(accept)
            body = built.v2_protobuf if media == PROTOBUF_V2_ANSWER else built.v2_json
            return _answer(body, media, built.v2_etag, if_none_match)
        if path == "/openapi/v3":
            return Response(built.v3_index, 200, media_type=_JSON)
        found = built.v3.get(path.removeprefix("/openapi/v3/"))
        if found is None:
            raise errors.not_found("", "")
        body, etag = found
        return _answer(body, _JSON, etag, if_none_match)


def _answer(body: bytes, media: str, etag: str, if_none_match: str | None) -> Response:
    headers = {"ETag": etag, "Vary": "Accept", "Cache-Control": "no-cache, private"}
    if if_none_match and etag in (t.strip() for t in if_none_match.split(",")):
        return Response(b"", 304, headers)
    return Response(body, 200, headers, media_type=media)
