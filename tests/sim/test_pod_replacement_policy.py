"""A Deployment's ``spec.podReplacementPolicy`` in the emulator (kube-apiserver's gate
DeploymentPodReplacementPolicy, alpha and off in 1.36): KCM's TestDeploymentStrategy table
(pkg/registry/apps/deployment/strategy_test.go) on the strategy, then the gate end to end over
HTTP — dropped while off, kept and validated with kube's message while on, never defaulted."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from pycm.sim import command
from pycm.sim.registry.workloads import DEPLOYMENT, DEPLOYMENT_WITH_POD_REPLACEMENT_POLICY
from pycm.sim.server import run_emulator
from tests.sim.conftest import deployment

Obj = dict[str, Any]
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
TC, TS = "TerminationComplete", "TerminationStarted"
UNSET = None


def _with_policy(policy: str | None) -> Obj:
    body = deployment("web", replicas=3)
    body["metadata"].update(namespace="default", resourceVersion="1", generation=1)
    if policy is not None:
        body["spec"]["podReplacementPolicy"] = policy
    return body


def _policy(obj: Obj) -> str | None:
    return obj["spec"].get("podReplacementPolicy")  # type: ignore[no-any-return]


# (gate on at create, gate on at update, created with, expected after create or "invalid",
#  updated to, expected after update or "invalid") — kube's cases; its "DeploymentReplicaSet
#  TerminatingReplicas disabled after create" variants are the same rows here (the emulator
#  always serves status.terminatingReplicas).
CASES = [
    pytest.param(False, False, UNSET, UNSET, UNSET, UNSET, id="gate-off"),
    pytest.param(True, True, UNSET, UNSET, UNSET, UNSET, id="gate-on-not-defaulted"),
    pytest.param(False, False, TC, UNSET, TC, UNSET, id="gate-off-drops"),
    pytest.param(False, False, "Invalid", UNSET, "Invalid", UNSET, id="gate-off-drops-invalid"),
    pytest.param(True, True, TC, TC, TS, TS, id="gate-on-respects"),
    pytest.param(True, True, "Invalid", "invalid", UNSET, UNSET, id="gate-on-invalid-create"),
    pytest.param(True, True, UNSET, UNSET, "Invalid", "invalid", id="gate-on-invalid-update"),
    pytest.param(True, False, TC, TC, TS, TS, id="gate-off-after-create-in-use-kept"),
    pytest.param(True, False, TC, TC, "Invalid", "invalid", id="gate-off-after-create-invalid"),
]


@pytest.mark.parametrize(
    ("on_create", "on_update", "created", "after_create", "updated", "after_update"), CASES
)
def test_deployment_strategy_kcm_cases(
    on_create: bool,
    on_update: bool,
    created: str | None,
    after_create: str | None,
    updated: str | None,
    after_update: str | None,
) -> None:
    create = DEPLOYMENT_WITH_POD_REPLACEMENT_POLICY if on_create else DEPLOYMENT
    update = DEPLOYMENT_WITH_POD_REPLACEMENT_POLICY if on_update else DEPLOYMENT
    old = _with_policy(created)
    create.default(old)
    create.prepare_for_create(old)
    causes = create.validate(old)
    if after_create == "invalid":
        assert [c["field"] for c in causes] == ["spec.podReplacementPolicy"]
        return
    assert causes == []
    assert _policy(old) == after_create
    new = _with_policy(updated)
    update.prepare_for_update(new, copy.deepcopy(old))
    update.default(new)
    causes = update.validate_update(new, old)
    if after_update == "invalid":
        assert [c["field"] for c in causes] == ["spec.podReplacementPolicy"]
        return
    assert causes == []
    assert _policy(new) == after_update


@pytest.mark.asyncio
async def test_gate_on_keeps_validates_and_does_not_default_over_http() -> None:
    async with run_emulator(
        tls=False, kubelet=False, deployment_pod_replacement_policy=True
    ) as emu:
        headers = {"Authorization": f"Bearer {emu.admin_token}"}
        async with httpx.AsyncClient(base_url=emu.url, headers=headers) as http:
            r = await http.post(DEPLOYMENTS, json=_with_policy(UNSET) | {"metadata": {"name": "a"}})
            assert r.status_code == 201, r.text
            assert "podReplacementPolicy" not in r.json()["spec"]
            body = _with_policy(TC)
            body["metadata"] = {"name": "b"}
            r = await http.post(DEPLOYMENTS, json=body)
            assert r.status_code == 201, r.text
            assert (await http.get(f"{DEPLOYMENTS}/b")).json()["spec"]["podReplacementPolicy"] == TC
            body["metadata"] = {"name": "c"}
            body["spec"]["podReplacementPolicy"] = "Invalid"
            r = await http.post(DEPLOYMENTS, json=body)
            assert r.status_code == 422, r.text
            (cause,) = r.json()["details"]["causes"]
            assert cause == {
                "reason": "FieldValueNotSupported",
                "message": 'Unsupported value: "Invalid": supported values: '
                '"TerminationComplete", "TerminationStarted"',
                "field": "spec.podReplacementPolicy",
            }


@pytest.mark.asyncio
async def test_gate_off_drops_the_field_over_http(http: httpx.AsyncClient) -> None:
    body = _with_policy("Invalid")  # dropped before validation: no error either
    body["metadata"] = {"name": "d"}
    r = await http.post(DEPLOYMENTS, json=body)
    assert r.status_code == 201, r.text
    assert "podReplacementPolicy" not in r.json()["spec"]
    stored = (await http.get(f"{DEPLOYMENTS}/d")).json()
    stored["spec"]["podReplacementPolicy"] = TC
    r = await http.put(f"{DEPLOYMENTS}/d", json=stored)
    assert r.status_code == 200, r.text
    assert "podReplacementPolicy" not in r.json()["spec"]


def test_sim_flag_knows_the_gate_off_by_default() -> None:
    assert command.SIM_FEATURE_GATES["DeploymentPodReplacementPolicy"] is False
    assert command._feature_gates("DeploymentPodReplacementPolicy=true") == {
        "DeploymentPodReplacementPolicy": True
    }
    parser = command.argparse.ArgumentParser()
    command.add_subcommand(parser.add_subparsers())
    on = parser.parse_args(["sim", "--feature-gates=DeploymentPodReplacementPolicy=true"])
    assert command.options_from_args(on).deployment_pod_replacement_policy is True
    off = parser.parse_args(["sim"])
    assert command.options_from_args(off).deployment_pod_replacement_policy is False
