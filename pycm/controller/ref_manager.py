"""ControllerRef adoption and release (KCM's BaseControllerRefManager.ClaimObject).

For each candidate object (from the informer cache, matching or not):

- owned by another controller (its controller reference names another UID) → never touched;
- owned by us and the selector matches → claimed;
- owned by us, no longer matching → released (our reference removed), unless we are being
  deleted;
- an orphan that matches, not being deleted, in our namespace, while we are not being deleted →
  adopted — but only after a live GET of the owner confirms it still exists with the same UID
  and is not being deleted (checked once per claim: a stale cache must not make a controller
  adopt for an owner that is gone).

Writes are JSON merge patches of ``metadata.ownerReferences`` carrying the object's
``resourceVersion`` and ``uid``: the server refuses them with a conflict if the object changed
since it was read, so two controllers racing for one orphan cannot both win.

The candidates: KCM hands the claim every object of the namespace, and the claim skips at once
those another controller owns. :data:`CLAIM_INDEX` files each object under its namespace and
its controller's UID (orphans under the namespace alone), read exactly as the claim reads it,
so :func:`claim_candidates` is two index lookups — ours and the orphans — that give the claim
the objects it would not skip, in the lister's order.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from pycm.api.labels import Selector
from pycm.api.meta import controller_ref, deletion_timestamp, labels, namespace, uid
from pycm.api.owner import new_controller_ref
from pycm.kube.errors import is_not_found

__all__ = [
    "CLAIM_INDEX",
    "AdoptionRefused",
    "ClaimResult",
    "ControllerRefManager",
    "add_claim_index",
    "claim_candidates",
    "claim_index_func",
    "controller_of",
]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
PatchFunc = Callable[[Obj, Obj], Awaitable[Obj]]
"""``async patch(obj, merge_patch) -> updated obj`` (raises the client's errors)."""
FreshOwnerFunc = Callable[[], Awaitable[Obj]]
"""``async get()`` of the owner, uncached (a live GET)."""


class AdoptionRefused(Exception):
    """The live owner is gone, replaced (another UID) or being deleted."""


class ClaimResult:
    __slots__ = ("adopted", "claimed", "errors", "released")

    def __init__(self) -> None:
        self.claimed: list[Obj] = []
        self.adopted: list[str] = []
        self.released: list[str] = []
        self.errors: list[Exception] = []


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """metav1.GetControllerOf for the claim loop, which runs over every object of the
    namespace on every sync: decoded objects are plain dicts and lists, read directly; any
    other shape takes the general accessor."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        refs = meta.get("ownerReferences")
        if refs is None:
            return None
        if isinstance(refs, list):
            for ref in refs:
                if ref.get("controller") is True:
                    return ref  # type: ignore[no-any-return]
            return None
    return controller_ref(obj)


CLAIM_INDEX = "pycm/claim-candidates"


def claim_index_func(obj: Obj) -> list[str]:
    """``"<namespace>/<controller uid>"``; ``"<namespace>/"`` for an orphan (and for a
    controller reference without a UID, which the claim skips as another's)."""
    meta = obj.get("metadata") or {}
    ref = controller_of(obj)
    owner = "" if ref is None else str(ref.get("uid") or "")
    return [f"{meta.get('namespace') or ''}/{owner}"]


class _Indexer(Protocol):
    """The subset of :class:`pycm.cache.indexer.Indexer` the candidates come from."""

    key_func: Callable[[Any], str]

    @property
    def indexers(self) -> Mapping[str, Callable[[Obj], list[str]]]: ...

    def add_indexers(self, indexers: Mapping[str, Callable[[Obj], list[str]]]) -> None: ...

    def by_index(self, name: str, value: str) -> list[Obj]: ...


def add_claim_index(indexer: _Indexer) -> None:
    """Declare :data:`CLAIM_INDEX` once per indexer (informers are shared)."""
    if CLAIM_INDEX not in indexer.indexers:
        indexer.add_indexers({CLAIM_INDEX: claim_index_func})


def claim_candidates(indexer: _Indexer, namespace: str, owner_uid: str) -> list[Obj]:
    """The objects of ``namespace`` whose controller is ``owner_uid`` or that have none — all
    that a claim over the namespace's objects does not skip — in key order (the lister's)."""
    if not namespace:
        return []  # the lister's namespace index holds no object without one
    orphans = indexer.by_index(CLAIM_INDEX, f"{namespace}/")
    if not owner_uid:
        return orphans
    owned = indexer.by_index(CLAIM_INDEX, f"{namespace}/{owner_uid}")
    if not orphans:
        return owned
    if not owned:
        return orphans
    return sorted((*owned, *orphans), key=indexer.key_func)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """meta.labels, read directly from decoded dicts (the claim loop's accessor)."""
    meta = obj.get("metadata")
    if type(meta) is dict:
        value = meta.get("labels")
        if type(value) is dict:
            return value
    return labels(obj)


def _owner(controller: Mapping[str, Any]) -> tuple[str, bool]:
    """(uid, being deleted) of the owner, read directly from a decoded dict."""
    meta = controller.get("metadata")
    if type(meta) is dict:
        stamp = meta.get("deletionTimestamp")
        if not (isinstance(stamp, str) and stamp):
            return str(meta.get("uid") or ""), False
    return uid(controller), deletion_timestamp(controller) is not None


def _is_not_found(exc: Exception) -> bool:
    return is_not_found(exc)


class ControllerRefManager:
    def __init__(
        self,
        controller: Mapping[str, Any],
        *,
        kind: str,
        api_version: str,
        selector: Selector,
        patch: PatchFunc,
        fresh_owner: FreshOwnerFunc,
    ) -> None:
        self.controller = controller
        self.kind = kind
        self.api_version = api_version
        self.selector = selector
        self._patch = patch
        self._fresh_owner = fresh_owner
        self._can_adopt: bool | None = None
        self._can_adopt_error: Exception | None = None

    async def _check_can_adopt(self) -> None:
        if self._can_adopt is None:
            try:
                fresh = await self._fresh_owner()
            except Exception as exc:
                self._can_adopt, self._can_adopt_error = False, exc
            else:
                want, got = uid(self.controller), uid(fresh)
                if got != want:
                    self._can_adopt = False
                    self._can_adopt_error = AdoptionRefused(
                        f"original {self.kind} {namespace(self.controller)}/"
                        f"{self.controller.get('metadata', {}).get('name')} is gone: "
                        f"got uid {got}, wanted {want}"
                    )
                elif deletion_timestamp(fresh) is not None:
                    self._can_adopt = False
                    self._can_adopt_error = AdoptionRefused(
                        f"{self.kind} {namespace(fresh)}/{fresh['metadata'].get('name')} "
                        f"has just been deleted at {fresh['metadata'].get('deletionTimestamp')}"
                    )
                else:
                    self._can_adopt = True
        if not self._can_adopt:
            assert self._can_adopt_error is not None
            raise self._can_adopt_error

    async def claim(self, objects: Sequence[Obj]) -> ClaimResult:
        result = ClaimResult()
        owner_uid, owner_deleting = _owner(self.controller)
        matches = self.selector.matches
        for obj in objects:
            ref = controller_of(obj)
            # The selector is matched only where it decides (as KCM's ClaimObject does):
            # most candidates in a namespace belong to other controllers.
            if ref is not None:
                if ref.get("uid") != owner_uid:
                    continue  # another controller's: never touch it
                if matches(_labels(obj)):
                    result.claimed.append(obj)
                    continue
                if owner_deleting:
                    continue
                try:
                    await self._release(obj)
                    result.released.append(obj.get("metadata", {}).get("name", ""))
                except Exception as exc:
                    if not _is_not_found(exc):
                        result.errors.append(exc)
                continue
            # An orphan.
            if owner_deleting or not matches(labels(obj)) or deletion_timestamp(obj) is not None:
                continue
            if namespace(self.controller) and namespace(self.controller) != namespace(obj):
                continue
            try:
                adopted = await self._adopt(obj)
            except Exception as exc:
                if not _is_not_found(exc):
                    result.errors.append(exc)
                continue
            result.claimed.append(adopted)
            result.adopted.append(obj.get("metadata", {}).get("name", ""))
        return result

    async def _adopt(self, obj: Obj) -> Obj:
        await self._check_can_adopt()
        refs = [dict(r) for r in obj.get("metadata", {}).get("ownerReferences") or []]
        refs.append(new_controller_ref(self.controller, self.kind, self.api_version))
        log.info("adopting %s %s", obj.get("kind", ""), obj.get("metadata", {}).get("name"))
        return await self._patch(obj, self._owner_patch(obj, refs))

    async def _release(self, obj: Obj) -> Obj:
        owner_uid = uid(self.controller)
        refs = [
            dict(r)
            for r in obj.get("metadata", {}).get("ownerReferences") or []
            if r.get("uid") != owner_uid
        ]
        log.info("releasing %s %s", obj.get("kind", ""), obj.get("metadata", {}).get("name"))
        return await self._patch(obj, self._owner_patch(obj, refs))

    @staticmethod
    def _owner_patch(obj: Obj, refs: list[dict[str, Any]]) -> Obj:
        meta = obj.get("metadata", {})
        return {
            "metadata": {
                "ownerReferences": refs or None,
                "resourceVersion": meta.get("resourceVersion"),
                "uid": meta.get("uid"),
            }
        }
