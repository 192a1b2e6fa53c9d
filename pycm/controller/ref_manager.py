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
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pycm.api.labels import Selector
from pycm.api.meta import controller_ref, deletion_timestamp, labels, namespace, uid
from pycm.api.owner import new_controller_ref

__all__ = ["AdoptionRefused", "ClaimResult", "ControllerRefManager"]

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


def _controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
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


def _is_not_found(exc: Exception) -> bool:
    return getattr(exc, "code", None) == 404


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
        owner_uid = uid(self.controller)
        owner_deleting = deletion_timestamp(self.controller) is not None
        matches = self.selector.matches
        for obj in objects:
            ref = _controller_ref(obj)
            # The selector is matched only where it decides (as KCM's ClaimObject does):
            # most candidates in a namespace belong to other controllers.
            if ref is not None:
                if ref.get("uid") != owner_uid:
                    continue  # another controller's: never touch it
                if matches(labels(obj)):
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
