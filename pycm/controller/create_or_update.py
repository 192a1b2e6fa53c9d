"""create-or-update (controller-runtime's ``controllerutil.CreateOrUpdate``) and
``ignore_not_found``.

:func:`create_or_update` reads the object live (the cache may be behind the writes this very
controller just made), lets ``mutate`` bring a copy to the wanted state, and then creates it
(it did not exist), updates it with a PUT carrying the read resourceVersion (it differs: a 409
when it changed meanwhile), or writes nothing (``mutate`` changed nothing). It returns what it
did (:class:`~pycm.trace.kinds.EnsureResult`) and the object, and traces ``object.ensured``.
Server-side apply (``Client.apply``) is the alternative when the wanted state is a whole
manifest: no read, no diff, the server merges.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from pycm.api.meta import Obj
from pycm.kube.errors import NotFound
from pycm.kube.resources import Resource
from pycm.trace.bus import Bus
from pycm.trace.kinds import EnsureResult, ObjectEnsured

__all__ = ["EnsureResult", "MutateFunc", "UpsertClient", "create_or_update", "ignore_not_found"]

T = TypeVar("T")

MutateFunc = Callable[[Obj], None]
"""Bring the given object (a fresh copy; ``{"metadata": {name, namespace}}`` when it does
not exist yet) to the wanted state, in place. It must not change the name or namespace."""


class UpsertClient(Protocol):
    """The subset of :class:`~pycm.kube.client.Client` :func:`create_or_update` uses."""

    @property
    def bus(self) -> Bus: ...

    async def get(self, res: Resource, name: str, *, namespace: str | None = "") -> Obj: ...

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Obj: ...

    async def update(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Obj: ...


async def create_or_update(
    client: UpsertClient, res: Resource, namespace: str, name: str, mutate: MutateFunc
) -> tuple[EnsureResult, Obj]:
    """Create or update ``namespace/name`` of ``res`` to what ``mutate`` makes of it."""
    try:
        current: Obj | None = await client.get(res, name, namespace=namespace)
    except NotFound:
        current = None
    if current is None:
        obj: Obj = {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": name}}
        if res.namespaced:
            obj["metadata"]["namespace"] = namespace
        mutate(obj)
        _check_key(obj, namespace if res.namespaced else "", name)
        written = await client.create(res, obj, namespace=namespace if res.namespaced else "")
        result = EnsureResult.CREATED
    else:
        obj = copy.deepcopy(current)
        mutate(obj)
        _check_key(obj, namespace if res.namespaced else "", name)
        if obj == current:
            written, result = current, EnsureResult.UNCHANGED
        else:
            written = await client.update(res, obj, namespace=namespace if res.namespaced else "")
            result = EnsureResult.UPDATED
    client.bus.point(
        ObjectEnsured(resource=res.group_resource, namespace=namespace, name=name, result=result)
    )
    return result, written


def _check_key(obj: Mapping[str, Any], namespace: str, name: str) -> None:
    meta = obj.get("metadata") or {}
    if meta.get("name") != name or str(meta.get("namespace") or "") != namespace:
        raise ValueError("create_or_update: mutate must not change the name or the namespace")


async def ignore_not_found(call: Awaitable[T]) -> T | None:
    """``await call``, or None when it fails with 404 Not Found (a delete of what is gone
    already, a read of what the cache still shows after it was deleted)."""
    try:
        return await call
    except NotFound:
        return None
