"""Request bodies, read and decoded as kube-apiserver does, with its limits.

- **Size**: a body over :data:`MAX_REQUEST_BODY_BYTES` (3 MiB, apiserver's
  ``MaxRequestBodyBytes``) is 413 RequestEntityTooLarge. A Content-Length over the limit is
  refused before anything is read; otherwise the stream is counted while it is read, so a body
  without a length (chunked) never gets buffered past the limit.
- **Media type**: an object body is ``application/json`` or ``application/yaml``; a patch is
  one of kube's patch types (JSON, merge, strategic merge, and apply YAML, which the patch
  layer then refuses). A body with no Content-Type is JSON (apiserver takes the first
  serializer it offers). Anything else — ``text/plain`` is not JSON — is 415
  UnsupportedMediaType, listing what is accepted. Protobuf is not served.
- **YAML aliases are refused** (400): an alias costs a few bytes and can stand for a whole
  subtree, so a 394-byte "billion laughs" document expands to millions of nodes once the object
  is copied or encoded. Kubernetes manifests have no use for them; go-yaml bounds their
  expansion, the emulator refuses them outright. YAML is parsed in a worker thread when large,
  so a slow parse does not stall every other request.
- **Nesting is bounded** (400 ``exceeded max depth of 100``): objects and arrays nested more
  than :data:`~pycm.sim.objects.MAX_DEPTH` deep, JSON or YAML, object or patch. kube refuses
  past 10,000 (Go's JSON decoder and go-yaml say "exceeded max depth"); why the emulator's
  bound is lower is written on ``MAX_DEPTH``. YAML is counted while it is composed, so a
  10,000-deep document stops at level 101 instead of exhausting the recursion; JSON is decoded
  by orjson (which itself stops at 1,024) and then measured, only when it has more brackets
  than the bound (counting them is one C pass; real objects rarely have that many).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

import orjson
import yaml
from starlette.requests import Request

from pycm.sim import errors
from pycm.sim.objects import MAX_DEPTH, nesting_exceeds

__all__ = ["MAX_REQUEST_BODY_BYTES", "OBJECT_TYPES", "PATCH_TYPES", "decode_body", "read_body"]

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
JSON, YAML = "json", "yaml"
# What a create, update or delete body may be; what a patch may be (kube's patch types).
OBJECT_TYPES = {"application/json": JSON, "application/yaml": YAML}
PATCH_TYPES = {
    "application/json-patch+json": JSON,
    "application/merge-patch+json": JSON,
    "application/strategic-merge-patch+json": JSON,
    "application/apply-patch+yaml": YAML,
}
_THREAD_PARSE_BYTES = 64 * 1024  # YAML larger than this is parsed off the event loop
_TOO_DEEP = f"exceeded max depth of {MAX_DEPTH}"


class _NoAliasLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases (the composer is where they are resolved) and
    collections nested past MAX_DEPTH (the composer is where the nesting recurses)."""

    _depth = 0  # collections open around the node being composed

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases are not supported", event.start_mark
            )
        if not self.check_event(yaml.MappingStartEvent, yaml.SequenceStartEvent):
            return super().compose_node(parent, index)
        if self._depth >= MAX_DEPTH:
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(None, None, _TOO_DEEP, event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def media_type(request: Request) -> str:
    """The request's Content-Type without parameters, lower-cased ("" when absent)."""
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def read_body(request: Request, limit: int = MAX_REQUEST_BODY_BYTES) -> bytes:
    """The request's body, 413 as soon as it is known to exceed ``limit`` bytes."""
    length = request.headers.get("content-length")
    if length is not None and length.strip().isdigit() and int(length) > limit:
        raise errors.too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise errors.too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def decode_body(request: Request, accepted: Mapping[str, str] = OBJECT_TYPES) -> Any:
    """The decoded body (None when empty); 413, 415 or 400 as the module says. ``accepted``
    maps each media type taken to its syntax; a missing Content-Type is the first one's."""
    media = media_type(request) or next(iter(accepted))
    syntax = accepted.get(media)
    if syntax is None:
        # Refused before reading: the body's size does not matter then.
        raise errors.unsupported_media(", ".join(accepted))
    raw = await read_body(request)
    if not raw.strip():
        return None
    try:
        decoded: Any = _NOT_JSON
        if syntax == YAML and raw.lstrip()[:1] in (b"{", b"["):
            # What kubectl and controller-runtime send as apply-patch+yaml is JSON, which is
            # YAML: orjson reads it ~100x faster than PyYAML's pure-Python parser (80% of an
            # apply's time before). YAML's flow style (`{a: b}`) is not JSON: parsed as YAML.
            with contextlib.suppress(orjson.JSONDecodeError):
                decoded = orjson.loads(raw)
        if decoded is _NOT_JSON and syntax == YAML:
            if len(raw) > _THREAD_PARSE_BYTES:
                return await asyncio.to_thread(_load_yaml, raw)
            return _load_yaml(raw)
        if decoded is _NOT_JSON:
            decoded = orjson.loads(raw)
    except (orjson.JSONDecodeError, yaml.YAMLError) as err:
        why = _TOO_DEEP if "depth limit exceeded" in str(err) else err  # orjson's 1,024
        raise errors.bad_request(f"the body of the request could not be decoded: {why}") from None
    # Depth is at most the number of brackets: most bodies are cleared by counting them.
    if raw.count(b"{") + raw.count(b"[") > MAX_DEPTH and nesting_exceeds(decoded):
        raise errors.bad_request(f"the body of the request could not be decoded: {_TOO_DEEP}")
    return decoded


_NOT_JSON = object()


def _load_yaml(raw: bytes) -> Any:
    return yaml.load(raw, Loader=_NoAliasLoader)
