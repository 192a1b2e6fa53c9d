"""The sharded overlay's RBAC against the emulator's: two members run their Lease loops as the
manifests' service account, under a policy built from the base's Roles and the overlay's.

Every call the members made is replayed against the rules (names included): nothing used that
is not granted, each of the overlay's grants used. Without the overlay, the base alone refuses
the ring's list (403): the overlay is needed. The members run in-process (pycm's client, over
HTTP; a fake clock drives their periods), so this checks the membership's own calls; the
in-cluster run of ``pycm run --sharded`` is the e2e tests'.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import yaml

from pycm.kube import Client, load_config
from pycm.kube.errors import ApiError
from pycm.kube.resources import LEASES
from pycm.kube.resources import NAMESPACES as NAMESPACE_RESOURCE
from pycm.sharding.leases import ClientLeaseStore
from pycm.sharding.membership import RING_LABEL, Membership, MembershipConfig, lease_name
from pycm.sim.auth import UserInfo
from pycm.sim.server import Emulator, run_emulator
from pycm.util.clock import FakeClock
from tests.deploy.rbac import (
    MANAGER_ROLES,
    SHARDING_ROLE,
    Call,
    emulator_policy,
    grants,
    record_calls,
)

NAMESPACE = "pycm-system"
SA_USER = f"system:serviceaccount:{NAMESPACE}:pycm"
SCRAPER = "system:serviceaccount:monitoring:prometheus"


class _Rig:
    def __init__(self, emu: Emulator, admin: Client, member_client: Client) -> None:
        self.emu, self.admin, self.client = emu, admin, member_client
        self.calls: list[Call] = []


@contextlib.asynccontextmanager
async def _rig(tmp: Path, roles: Sequence[Path]) -> AsyncIterator[_Rig]:
    policy = tmp / "policy.yaml"
    policy.write_text(yaml.safe_dump(emulator_policy(SA_USER, SCRAPER, roles)))
    async with run_emulator(
        tls=False, kubelet=False, nodes=1, authz_policy_file=str(policy)
    ) as emu:
        token = secrets.token_urlsafe(24)
        emu.authenticator.add(token, UserInfo(SA_USER, "uid-pycm", ("system:serviceaccounts",)))
        config = await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
        admin = await Client.connect(config)
        member_client = await Client.connect(dataclasses.replace(config, token=token))
        rig = _Rig(emu, admin, member_client)

        record_calls(
            emu, rig.calls, lambda r: r.headers.get("authorization", "") == f"Bearer {token}"
        )
        try:
            await admin.create(NAMESPACE_RESOURCE, {"metadata": {"name": NAMESPACE}})
            yield rig
        finally:
            await member_client.aclose()
            await admin.aclose()


def _member(rig: _Rig, name: str, clock: FakeClock) -> Membership:
    return Membership(
        MembershipConfig("pycm", name, lease_duration=15, renew_deadline=10, retry_period=2),
        ClientLeaseStore(rig.client, NAMESPACE),
        lambda: (),
        clock=clock,
    )


@pytest.mark.asyncio
async def test_sharded_overlay_role_is_used_and_enough_for_the_members(tmp_path: Path) -> None:
    roles = (*MANAGER_ROLES, SHARDING_ROLE)
    async with _rig(tmp_path, roles) as rig:
        # pycm-1 restarts with its identity: its Lease from before is still there (create
        # answers 409, it reads the Lease and updates it).
        stale = {
            "metadata": {"name": lease_name("pycm", "pycm-1"), "labels": {RING_LABEL: "pycm"}},
            "spec": {"holderIdentity": "pycm-1", "leaseDurationSeconds": 15},
        }
        await rig.admin.create(LEASES, stale, namespace=NAMESPACE)
        clock = FakeClock()
        members = [_member(rig, name, clock) for name in ("pycm-0", "pycm-1")]
        for _ in range(3):
            for member in members:
                await member.tick()
            clock.advance(2.0)
        both = frozenset({"pycm-0", "pycm-1"})
        assert [m.claims.published for m in members] == [both, both]
        members[1].stop()
        await members[1].tick()  # writes the empty view
        await members[1].tick()  # deletes its Lease
        assert members[1].released.is_set()
        page = await rig.admin.list(LEASES, namespace=NAMESPACE)
        assert [i["metadata"]["name"] for i in page["items"]] == ["pycm-pycm-0"]
        calls = list(rig.calls)
    assert {c.verb for c in calls} == {"create", "get", "list", "update", "delete"}
    rules = grants(roles)
    refused = sorted(str(c) for c in calls if not any(g.allows(c) for g in rules))
    assert not refused, f"used but not granted: {refused}"
    overlay = grants([SHARDING_ROLE])
    unused = [str(g) for g in overlay if not any(g.allows(c) for c in calls)]
    assert not unused, f"the overlay grants what a member never uses: {unused}"


@pytest.mark.asyncio
async def test_without_the_overlay_a_member_cannot_read_its_ring(tmp_path: Path) -> None:
    async with _rig(tmp_path, MANAGER_ROLES) as rig:
        store = ClientLeaseStore(rig.client, NAMESPACE)
        with pytest.raises(ApiError) as refused:
            await store.read_ring("pycm")
        assert refused.value.code == 403
        member = _member(rig, "pycm-0", FakeClock())
        await member.tick()  # the write goes through the base's create; the read is refused
        assert not member.may_take(0) and not member.may_take((1 << 64) - 1)
