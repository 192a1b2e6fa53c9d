"""``pycm run``'s sharding flags: parsed into the configuration, checked as leader election's
timings are (client-go's ratios), the ring a DNS-1123 label; nothing checked without --sharded."""

from __future__ import annotations

import pytest

from pycm.app.options import ControllerManagerOptions


def _errors(*argv: str) -> list[str]:
    options = ControllerManagerOptions()
    errors = options.parse(list(argv))
    return errors + options.validate()


def test_sharded_flags_reach_the_configuration() -> None:
    options = ControllerManagerOptions()
    argv = ["--sharded", "--sharding-ring=shop", "--sharding-lease-namespace=ops"]
    argv += ["--sharding-lease-duration=4s", "--sharding-renew-deadline=3s"]
    argv += ["--sharding-retry-period=1s"]
    assert options.parse(argv) == []
    assert options.validate() == []
    sharding = options.config().sharding
    assert (sharding.sharded, sharding.ring, sharding.lease_namespace) == (True, "shop", "ops")
    assert (sharding.lease_duration, sharding.renew_deadline, sharding.retry_period) == (4, 3, 1)


def test_defaults_are_leader_elections_and_off() -> None:
    sharding = ControllerManagerOptions().config().sharding
    assert not sharding.sharded
    assert (sharding.lease_duration, sharding.renew_deadline, sharding.retry_period) == (15, 10, 2)
    assert sharding.ring == "pycm"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--sharding-renew-deadline=20s"],
            "sharding-lease-duration must be greater than sharding-renew-deadline "
            "(got 15s and 20s)",
            id="renew-over-lease",
        ),
        pytest.param(
            ["--sharding-retry-period=9s"],
            "sharding-renew-deadline must be greater than 1.2 × sharding-retry-period "
            "(got 10s, want more than 10.8s)",
            id="retry-jitter",
        ),
        pytest.param(
            ["--sharding-lease-duration=0s"],
            "sharding-lease-duration must be greater than zero, got 0s",
            id="zero",
        ),
        pytest.param(
            ["--sharding-ring=Shop_1"],
            'sharding-ring "Shop_1" must be a DNS-1123 label',
            id="ring-label",
        ),
        pytest.param(
            ["--sharding-ring=" + "r" * 31],
            "must be a DNS-1123 label of at most 30 characters",
            id="ring-long",
        ),
        pytest.param(["--sharding-ring=-x"], "must be a DNS-1123 label", id="ring-dash"),
    ],
)
def test_bad_sharding_flags_are_refused_with_kube_style_messages(
    argv: list[str], message: str
) -> None:
    errors = _errors("--sharded", *argv)
    assert any(message in error for error in errors), errors


def test_nothing_is_checked_without_sharded() -> None:
    assert _errors("--sharding-renew-deadline=20s", "--sharding-ring=Bad_") == []
