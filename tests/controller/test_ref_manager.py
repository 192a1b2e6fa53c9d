"""ControllerRef adoption and release: adopt matching orphans after a live owner check, release
what stops matching, never touch another controller's objects."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.api.labels import selector_from_dict
from pycm.controller.ref_manager import AdoptionRefused, ControllerRefManager

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
    class Gone(Exception):
        code = 404

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
