"""The controllers' KCM 1.36 gates on ``--feature-gates``: their 1.36 defaults, the locked GA
gate refused against its lock with KCM's line, and each value reaching the controller it
switches."""

from __future__ import annotations

import pytest

from pycm.app.features import FEATURE_GATES, feature_gates_usage
from pycm.app.options import ControllerManagerOptions


def _errors(argv: list[str]) -> list[str]:
    options = ControllerManagerOptions()
    return options.parse(argv) + options.validate()


@pytest.mark.parametrize(
    ("name", "default", "stage", "locked"),
    [
        pytest.param("PodDeletionCost", True, "BETA", False, id="pod-deletion-cost"),
        pytest.param("LogarithmicScaleDown", True, "GA", True, id="log-scale-down"),
        pytest.param(
            "DeploymentReplicaSetTerminatingReplicas", True, "BETA", False, id="terminating"
        ),
        # kube's feature-gate page: alpha from 1.36, default false (KEP-5882).
        pytest.param(
            "DeploymentPodReplacementPolicy", False, "ALPHA", False, id="pod-replacement-policy"
        ),
    ],
)
def test_gate_has_kcm_136_stage_and_default(
    name: str, default: bool, stage: str, locked: bool
) -> None:
    spec = FEATURE_GATES[name]
    assert (spec.default, spec.stage, spec.locked, spec.kcm) == (default, stage, locked, True)
    assert f"{name}=true|false ({stage} - default={str(default).lower()})" in (
        feature_gates_usage().splitlines()
    )


def test_locked_gate_is_refused_against_its_lock_and_accepted_at_it() -> None:
    assert _errors(["--feature-gates=LogarithmicScaleDown=true"]) == []
    (error,) = _errors(["--feature-gates=LogarithmicScaleDown=false"])
    assert error.endswith(
        "cannot set feature gate LogarithmicScaleDown to false, feature is locked to true"
    )


def test_pod_replacement_policy_is_known_and_off_by_default() -> None:
    assert _errors(["--feature-gates=DeploymentPodReplacementPolicy=true"]) == []
    options = ControllerManagerOptions()
    assert options.parse([]) + options.validate() == []
    assert options.config().feature_gates.enabled("DeploymentPodReplacementPolicy") is False
    options = ControllerManagerOptions()
    assert options.parse(["--feature-gates=DeploymentPodReplacementPolicy=true"]) == []
    assert options.config().feature_gates.enabled("DeploymentPodReplacementPolicy") is True


def test_pod_replacement_policy_needs_the_terminating_replicas_gate() -> None:
    # kube makes DeploymentPodReplacementPolicy depend on DeploymentReplicaSetTerminatingReplicas
    # (its strategy tests never run it on with the other off): the policy's maths reads
    # status.terminatingReplicas.
    argv = [
        "--feature-gates=DeploymentPodReplacementPolicy=true,"
        "DeploymentReplicaSetTerminatingReplicas=false"
    ]
    (error,) = _errors(argv)
    assert error.endswith(
        "feature gate DeploymentPodReplacementPolicy requires feature gate "
        "DeploymentReplicaSetTerminatingReplicas to be enabled"
    )
    assert _errors(["--feature-gates=DeploymentReplicaSetTerminatingReplicas=false"]) == []


@pytest.mark.parametrize("value", [True, False])
def test_gate_values_reach_the_config(value: bool) -> None:
    options = ControllerManagerOptions()
    text = str(value).lower()
    argv = [
        f"--feature-gates=PodDeletionCost={text},DeploymentReplicaSetTerminatingReplicas={text}"
    ]
    assert options.parse(argv) + options.validate() == []
    gates = options.config().feature_gates
    assert gates.enabled("PodDeletionCost") is value
    assert gates.enabled("DeploymentReplicaSetTerminatingReplicas") is value
    assert gates.enabled("LogarithmicScaleDown") is True


def test_every_gate_is_in_the_operations_doc() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    table = doc[doc.index("### Feature gates") : doc.index("### Logs")]
    for name in FEATURE_GATES:
        assert f"`{name}`" in table, name
