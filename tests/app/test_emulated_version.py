"""``--emulated-version`` (KCM's compatibility flag) and the ``CoordinatedLeaderElection`` gate:
the version a LeaseCandidate publishes, KCM's range for 1.36, and the gate's 1.36 default."""

from __future__ import annotations

import pytest

from pycm.app.features import COORDINATED_LEADER_ELECTION, FEATURE_GATES
from pycm.app.options import ControllerManagerOptions
from pycm.leaderelection.candidate import kube_version


def _parse(argv: list[str]) -> tuple[ControllerManagerOptions, list[str]]:
    options = ControllerManagerOptions()
    return options, options.parse(argv) + options.validate()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("1.35", (1, 35), id="major.minor"),
        pytest.param("kube=1.33", (1, 33), id="component-form-oldest"),
        pytest.param("v1.36", (1, 36), id="v-prefix"),
    ],
)
def test_emulated_version_sets_what_the_candidate_publishes(
    value: str, expected: tuple[int, int]
) -> None:
    options, errors = _parse([f"--emulated-version={value}"])
    assert errors == []
    config = options.config()
    assert config.feature_gates.emulated_version == expected
    assert kube_version(config.feature_gates.emulated_version) == f"{expected[0]}.{expected[1]}.0"


def test_emulated_version_defaults_to_the_binary_version() -> None:
    options, errors = _parse([])
    assert errors == []
    assert kube_version(options.config().feature_gates.emulated_version) == "1.36.0"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        pytest.param("1.32", "emulation version 1.32 is not between [1.33, 1.36.0]", id="too-old"),
        pytest.param("1.37", "emulation version 1.37 is not between [1.33, 1.36.0]", id="newer"),
        pytest.param("wardle=1.2", "component not registered: wardle", id="other-component"),
        pytest.param("1.35.1", "illegal version string '1.35.1': want major.minor", id="patch"),
    ],
)
def test_emulated_version_refuses_what_kcm_refuses(value: str, error: str) -> None:
    _, errors = _parse([f"--emulated-version={value}"])
    assert len(errors) == 1 and error in errors[0], errors


def test_coordinated_leader_election_is_beta_and_off_by_default() -> None:
    spec = FEATURE_GATES[COORDINATED_LEADER_ELECTION]
    assert (spec.stage, spec.default, spec.locked) == ("BETA", False, False)
    options, errors = _parse(["--feature-gates=CoordinatedLeaderElection=true"])
    assert errors == []
    assert options.config().feature_gates.enabled(COORDINATED_LEADER_ELECTION)
