"""ControllerRef adoption and release: adopt matching orphans after a live owner check, release
what stops matching, never touch another controller's objects."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.api.labels import selector_from_dict
from pycm.cache.indexer import NAMESPACE_INDEX, Indexer
from pycm.controller.ref_manager import (
    AdoptionRefused,
    ControllerRefManager,
    add_claim_index,
    claim_candidates,
    controller_of,
)
from pycm.kube.errors import NotFound

OWNER = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web", "namespace": "prod", "uid": "rs-uid"},
}


def _pod(name: str, app: str = "web", owner_uid: str | None = None, **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "prod",
        "uid": f"{name}-uid",
        "resourceVersion": "5",
        "labels": {"app": app},
        **meta,
    }
    if owner_uid:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "x",
                "uid": owner_uid,
                "controller": True,
            }
        ]
    return {"kind": "Pod", "metadata": metadata}


class Patches:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.owner_gets = 0
        self.fresh_owner: dict[str, Any] = OWNER

    async def patch(self, obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((obj["metadata"]["name"], patch))
        updated = {**obj, "metadata": {**obj["metadata"], **patch["metadata"]}}
        return updated

    async def get_owner(self) -> dict[str, Any]:
        self.owner_gets += 1
        return self.fresh_owner


def _manager(p: Patches, owner: dict[str, Any] = OWNER) -> ControllerRefManager:
    return ControllerRefManager(
        owner,
        kind="ReplicaSet",
        api_version="apps/v1",
        selector=selector_from_dict({"matchLabels": {"app": "web"}}),
        patch=p.patch,
        fresh_owner=p.get_owner,
    )


@pytest.mark.asyncio
async def test_claim_keeps_owned_adopts_orphans_and_ignores_others() -> None:
    p = Patches()
    pods = [
        _pod("owned", owner_uid="rs-uid"),
        _pod("orphan"),
        _pod("orphan2"),
        _pod("foreign", owner_uid="other-uid"),
        _pod("nonmatching-orphan", app="db"),
    ]
    result = await _manager(p).claim(pods)
    assert [o["metadata"]["name"] for o in result.claimed] == ["owned", "orphan", "orphan2"]
    assert result.adopted == ["orphan", "orphan2"]
    assert [name for name, _ in p.calls] == ["orphan", "orphan2"]
    assert p.owner_gets == 1  # the live check runs once per claim
    patch = p.calls[0][1]["metadata"]
    assert patch["resourceVersion"] == "5"
    assert patch["uid"] == "orphan-uid"
    assert patch["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web",
            "uid": "rs-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert not result.errors


@pytest.mark.asyncio
async def test_owned_object_that_stops_matching_is_released() -> None:
    p = Patches()
    pod = _pod("drifted", app="db", owner_uid="rs-uid")
    result = await _manager(p).claim([pod])
    assert result.claimed == []
    assert result.released == ["drifted"]
    assert p.calls[0][1]["metadata"]["ownerReferences"] is None
    assert p.owner_gets == 0  # releasing needs no live check


@pytest.mark.parametrize(
    ("fresh", "message"),
    [
        pytest.param(
            {**OWNER, "metadata": {**OWNER["metadata"], "uid": "new-uid"}},
            "is gone: got uid new-uid, wanted rs-uid",
            id="recreated",
        ),
        pytest.param(
            {
                **OWNER,
                "metadata": {**OWNER["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"},
            },
            "has just been deleted",
            id="being-deleted",
        ),
    ],
)
@pytest.mark.asyncio
async def test_adoption_refused_when_the_live_owner_changed(
    fresh: dict[str, Any], message: str
) -> None:
    p = Patches()
    p.fresh_owner = fresh
    result = await _manager(p).claim([_pod("orphan"), _pod("orphan2")])
    assert result.claimed == []
    assert p.calls == []
    assert len(result.errors) == 2
    assert isinstance(result.errors[0], AdoptionRefused)
    assert message in str(result.errors[0])
    assert p.owner_gets == 1


@pytest.mark.asyncio
async def test_deleting_owner_neither_adopts_nor_releases() -> None:
    p = Patches()
    owner = {
        **OWNER,
        "metadata": {**OWNER["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"},
    }
    result = await _manager(p, owner).claim(
        [
            _pod("orphan"),
            _pod("drifted", app="db", owner_uid="rs-uid"),
            _pod("owned", owner_uid="rs-uid"),
        ]
    )
    assert [o["metadata"]["name"] for o in result.claimed] == ["owned"]
    assert p.calls == []


@pytest.mark.asyncio
async def test_orphan_being_deleted_or_in_another_namespace_is_not_adopted() -> None:
    p = Patches()
    dying = _pod("dying", deletionTimestamp="2024-01-01T00:00:00Z")
    elsewhere = _pod("elsewhere")
    elsewhere["metadata"]["namespace"] = "staging"
    result = await _manager(p).claim([dying, elsewhere])
    assert result.claimed == []
    assert p.calls == []


@pytest.mark.asyncio
async def test_not_found_during_adoption_is_not_an_error() -> None:
    class Gone(NotFound):
        def __init__(self, message: str) -> None:
            super().__init__(message, code=404)

    async def patch(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        raise Gone("pod gone")

    p = Patches()
    manager = ControllerRefManager(
        OWNER,
        kind="ReplicaSet",
        api_version="apps/v1",
        selector=selector_from_dict({"matchLabels": {"app": "web"}}),
        patch=patch,
        fresh_owner=p.get_owner,
    )
    result = await manager.claim([_pod("orphan")])
    assert result.claimed == []
    assert result.errors == []


# -- the claim's candidates, from the index ------------------------------------------------------


def _claim_world() -> Indexer:
    indexer = Indexer()
    add_claim_index(indexer)
    add_claim_index(indexer)  # informers are shared: declaring it twice is harmless
    for obj in (
        _pod("a-owned", owner_uid="rs-uid"),
        _pod("b-orphan"),
        _pod("c-foreign", owner_uid="other-uid"),
        _pod("d-owned-nonmatching", app="db", owner_uid="rs-uid"),
        _pod("e-orphan-nonmatching", app="db"),
        _pod("f-owned", owner_uid="rs-uid"),
        _pod("g-not-controller", ownerReferences=[{"uid": "rs-uid", "controller": False}]),
        _pod("h-controller-without-uid", ownerReferences=[{"kind": "X", "controller": True}]),
    ):
        indexer.add(obj)
    elsewhere = _pod("owned-elsewhere", owner_uid="rs-uid")
    elsewhere["metadata"]["namespace"] = "staging"
    indexer.add(elsewhere)
    return indexer


def _skipped(obj: dict[str, Any], owner_uid: str) -> bool:
    """The claim skips an object at once: another controller's (a controller reference
    without a UID included)."""
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") != owner_uid


def _scanned(indexer: Indexer, namespace: str, owner_uid: str) -> list[str]:
    """What KCM's claim over the namespace's objects does not skip at once."""
    return [
        o["metadata"]["name"]
        for o in indexer.by_index(NAMESPACE_INDEX, namespace)
        if not _skipped(o, owner_uid)
    ]


def _candidates(indexer: Indexer, namespace: str, owner_uid: str) -> list[str]:
    """The candidates, less those the claim skips (a controller reference without a UID is
    filed with the orphans)."""
    return [
        o["metadata"]["name"]
        for o in claim_candidates(indexer, namespace, owner_uid)
        if not _skipped(o, owner_uid)
    ]


@pytest.mark.parametrize("owner_uid", ["rs-uid", "other-uid", "nobody", ""])
def test_claim_candidates_are_the_namespace_objects_the_claim_does_not_skip(
    owner_uid: str,
) -> None:
    indexer = _claim_world()
    assert _candidates(indexer, "prod", owner_uid) == _scanned(indexer, "prod", owner_uid)


def test_claim_candidates_follow_owner_changes_and_ignore_other_namespaces() -> None:
    indexer = _claim_world()
    assert [o["metadata"]["name"] for o in claim_candidates(indexer, "staging", "rs-uid")] == [
        "owned-elsewhere"
    ]
    unscoped = _pod("unscoped", owner_uid="rs-uid")
    del unscoped["metadata"]["namespace"]
    indexer.add(unscoped)
    assert claim_candidates(indexer, "", "rs-uid") == []  # as the lister: none without one
    released = _pod("a-owned")
    indexer.update(released)  # released: an orphan now
    taken = _pod("b-orphan", owner_uid="other-uid")
    indexer.update(taken)  # adopted by another controller
    names = _candidates(indexer, "prod", "rs-uid")
    assert names == [
        "a-owned",
        "d-owned-nonmatching",
        "e-orphan-nonmatching",
        "f-owned",
        "g-not-controller",
    ]
    assert names == _scanned(indexer, "prod", "rs-uid")


@pytest.mark.asyncio
async def test_claim_over_the_candidates_equals_the_claim_over_the_namespace() -> None:
    indexer = _claim_world()
    p_all, p_candidates = Patches(), Patches()
    everything = await _manager(p_all).claim(indexer.by_index(NAMESPACE_INDEX, "prod"))
    candidates = await _manager(p_candidates).claim(claim_candidates(indexer, "prod", "rs-uid"))
    assert [o["metadata"]["name"] for o in candidates.claimed] == [
        o["metadata"]["name"] for o in everything.claimed
    ]
    assert (candidates.adopted, candidates.released) == (everything.adopted, everything.released)
    assert p_candidates.calls == p_all.calls
