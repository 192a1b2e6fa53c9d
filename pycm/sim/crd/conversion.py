"""Serving a custom resource through a version other than the one its objects are stored at.

A CRD's versions share one table, written at the storage version; objects written before the
storage version changed keep the one they were written at (``status.storedVersions`` lists
them all, as kube's does). With kube's ``None`` conversion strategy only ``apiVersion`` differs
between versions, so a request is handled by the storage version's resource and its answer
rewritten: :func:`served_as` changes every stored ``apiVersion`` to the one asked for — on the
object, on a list and its items, on each watch event's object (line by line, as the stream is
sent) and on a Table row's object. :func:`stored_versions` says which need it (none, the
common case of one version: the answer is not touched). Bodies that mention none pass as
they are.

Each version keeps its own schema, printer columns and subresources, as kube's per-version
storage does: :func:`acting_as` is the storage version's resource (its table, the apiVersion
objects are stored at) with the asked version's strategy, so a write through a version is
pruned, defaulted and validated with that version's schema, and a table prints that version's
columns. An object read through a version is answered as stored, only its apiVersion rewritten:
a field only the storage version's schema knows is not dropped on the way out.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from pycm.sim.crd.strategy import CustomResourceStrategy
from pycm.sim.resources import Resource

__all__ = ["acting_as", "served_as", "stored_versions"]


def stored_versions(storage: Resource, asked: Resource) -> tuple[str, ...]:
    """The apiVersions of ``asked``'s objects that an answer must rewrite: the storage
    version's and every earlier one's (``status.storedVersions``), less the one asked for."""
    strategy = storage.strategy
    if not isinstance(strategy, CustomResourceStrategy):
        return ()
    found = {storage.api_version, *strategy.stored_api_versions}
    found.discard(asked.api_version)
    return tuple(sorted(found))


def acting_as(storage: Resource, asked: Resource | None) -> Resource:
    """The resource that serves a request through ``asked`` (None: the storage version):
    ``storage``'s table and stored apiVersion, ``asked``'s schema, columns and subresources."""
    if asked is None or asked.strategy is storage.strategy:
        return storage
    return replace(storage, strategy=asked.strategy, subresources=asked.subresources)


def _rewrite(doc: Any, old: tuple[str, ...], new: str) -> None:
    if not isinstance(doc, dict):
        return
    if doc.get("apiVersion") in old:
        doc["apiVersion"] = new
    for item in doc.get("items") or ():  # a list
        if isinstance(item, dict) and item.get("apiVersion") in old:
            item["apiVersion"] = new
    if "type" in doc and isinstance(doc.get("object"), dict):  # a watch event
        _rewrite(doc["object"], old, new)
    for row in doc.get("rows") or ():  # a Table with includeObject=Object
        if isinstance(row, dict):
            _rewrite(row.get("object"), old, new)


def _convert(body: bytes, old: tuple[str, ...], new: str) -> bytes:
    if not any(version.encode() in body for version in old):
        return body
    lines = body.split(b"\n")
    out = []
    for line in lines:
        if line.strip():
            doc = orjson.loads(line)
            _rewrite(doc, old, new)
            line = orjson.dumps(doc)
        out.append(line)
    return b"\n".join(out)


class _Converted(Response):
    """A streaming response (a watch) whose body messages are rewritten as they are sent."""

    def __init__(self, inner: Response, old: tuple[str, ...], new: str) -> None:
        self._inner, self._old, self._new = inner, old, new
        self.status_code = inner.status_code
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def converting(message: Message) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                message = {**message, "body": _convert(message["body"], self._old, self._new)}
            await send(message)

        await self._inner(scope, receive, converting)


def served_as(response: Response, stored: tuple[str, ...], api_version: str) -> Response:
    """``response`` (made by the storage version) as the version ``api_version`` answers:
    the apiVersions ``stored`` rewritten to it."""
    body = getattr(response, "body", None)
    if isinstance(body, bytes):
        converted = _convert(body, stored, api_version)
        if converted is body:
            return response
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        fresh = Response(converted, response.status_code, media_type=response.media_type)
        for name, value in headers.items():
            if name.lower() not in ("content-type",):
                fresh.headers.append(name, value)
        return fresh
    return _Converted(response, stored, api_version)
