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
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import orjson
import yaml
from starlette.requests import Request

from pycm.sim import errors

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


class _NoAliasLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases (the composer is where they are resolved)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases are not supported", event.start_mark
            )
        return super().compose_node(parent, index)


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
        if syntax == YAML:
            if len(raw) > _THREAD_PARSE_BYTES:
                return await asyncio.to_thread(_load_yaml, raw)
            return _load_yaml(raw)
        return orjson.loads(raw)
    except (orjson.JSONDecodeError, yaml.YAMLError) as err:
        raise errors.bad_request(f"the body of the request could not be decoded: {err}") from None


def _load_yaml(raw: bytes) -> Any:
    return yaml.load(raw, Loader=_NoAliasLoader)
