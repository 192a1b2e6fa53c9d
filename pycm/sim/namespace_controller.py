"""Namespace lifecycle: what kube-apiserver's NamespaceLifecycle admission and
kube-controller-manager's namespace controller do, done synchronously inside the store.

- **Admission**: a namespaced object may be created only in a namespace that exists (404
  otherwise) and is not terminating (403 ``unable to create new content in namespace X because
  it is being terminated``).
- **Termination**: deleting a namespace sets its ``deletionTimestamp`` and ``status.phase:
  Terminating``, then deletes everything in it (grace period 0, as the namespace controller
  asks); the namespace is removed once it is empty — at once, or when the last object waiting
  for its finalizers (or a kubelet) goes.

Unlike kube, the namespace's ``spec.finalizers`` (``kubernetes``) are not removed first and its
``metadata.finalizers`` are not waited for: emptiness alone ends it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pycm.sim import errors
from pycm.sim.gc import DeleteOptions
from pycm.sim.objects import Obj, deep_copy

if TYPE_CHECKING:
    from pycm.sim.resources import Resource

__all__ = ["NamespaceController"]


class NamespaceStore(Protocol):
    """The subset of the Store the namespace controller uses."""

    def resource(self, plural: str, group: str = "") -> Resource: ...

    def peek(self, res: Resource, namespace: str | None, name: str) -> Obj | None: ...

    def delete(
        self, res: Resource, namespace: str | None, name: str, options: DeleteOptions | None
    ) -> tuple[Obj, bool]: ...

    def contents(self, namespace: str) -> list[tuple[Resource, str]]:
        """Every stored object in ``namespace``, as (resource, name), in a stable order."""
        ...

    def has_contents(self, namespace: str) -> bool: ...

    def commit_modified(self, res: Resource, new: Obj, old: Obj) -> Obj:
        """Store ``new`` over ``old`` as it is (no managedFields write, no deletion step)."""
        ...

    def remove_now(self, res: Resource, obj: Obj) -> None:
        """Remove the stored ``obj`` (DELETED), then collect what depended on it."""
        ...

    def now(self) -> str: ...


class NamespaceController:
    """Admission of new content and termination of deleted namespaces (see the module)."""

    def __init__(self, store: NamespaceStore) -> None:
        self._store = store

    def admit(self, res: Resource, namespace: str) -> None:
        """May an object of ``res`` be created in ``namespace``? (404 / 403 if not)."""
        if not res.namespaced:
            return
        if not namespace:
            raise errors.bad_request(
                "the server could not find the requested resource: a namespace is required"
            )
        ns = self._store.peek(self._store.resource("namespaces"), None, namespace)
        if ns is None:
            raise errors.not_found("namespaces", namespace)
        if (ns.get("metadata") or {}).get("deletionTimestamp"):
            raise errors.APIError(
                403,
                "Forbidden",
                f'{res.plural} "{ns["metadata"]["name"]}" is forbidden: unable to create new '
                f"content in namespace {namespace} because it is being terminated",
            )

    def terminate(self, res: Resource, ns_obj: Obj) -> tuple[Obj, bool]:
        """DELETE of a namespace: Terminating, its contents deleted; (object, removed now?)."""
        store = self._store
        name = ns_obj["metadata"]["name"]
        if not ns_obj["metadata"].get("deletionTimestamp"):
            new = deep_copy(ns_obj)
            new["metadata"]["deletionTimestamp"] = store.now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new.setdefault("status", {})["phase"] = "Terminating"
            ns_obj = store.commit_modified(res, new, ns_obj)
        for other, obj_name in store.contents(name):
            if store.peek(other, name, obj_name) is not None:  # not collected meanwhile
                store.delete(other, name, obj_name, DeleteOptions(grace_period_seconds=0))
        if not store.has_contents(name):
            store.remove_now(res, ns_obj)
            return deep_copy(ns_obj), True
        return deep_copy(ns_obj), False

    def content_removed(self, namespace: str) -> None:
        """An object in ``namespace`` was removed: a terminating namespace left empty goes."""
        store = self._store
        ns_res = store.resource("namespaces")
        ns_obj = store.peek(ns_res, None, namespace)
        if (
            ns_obj is not None
            and ns_obj["metadata"].get("deletionTimestamp")
            and not store.has_contents(namespace)
        ):
            store.remove_now(ns_res, ns_obj)
