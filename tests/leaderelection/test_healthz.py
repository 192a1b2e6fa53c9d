"""The leader-election watchdog's failure text, as client-go's HealthzAdaptor words it."""

from __future__ import annotations

import pytest

from pycm.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    LeaderHealthzAdaptor,
)
from pycm.leaderelection.fake import FakeLock, FakeLockServer
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock


async def _never() -> None:
    raise AssertionError("not run")


def _elector(clock: FakeClock, name: str) -> LeaderElector:
    config = LeaderElectionConfig(
        lock=FakeLock(FakeLockServer(), "a", name="kube-system/kube-controller-manager"),
        callbacks=LeaderCallbacks(on_started_leading=_never, on_stopped_leading=lambda: None),
        name=name,
    )
    return LeaderElector(config, clock=clock, bus=Bus(instance="a"))


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        pytest.param("kube-controller-manager", "kube-controller-manager", id="configured-name"),
        pytest.param("", "kube-system/kube-controller-manager", id="no-name-the-lock"),
    ],
)
@pytest.mark.asyncio
async def test_healthz_stalled_leader_fails_naming_the_lease_by_its_configured_name(
    name: str, shown: str
) -> None:
    clock = FakeClock()
    elector = _elector(clock, name)
    watchdog = LeaderHealthzAdaptor(tolerance=20, clock=clock)
    watchdog.set_elector(elector)
    assert (await elector.try_acquire_or_renew()).ok
    clock.advance(15 + 20 + 0.1)
    assert watchdog.check() == f"failed election to renew leadership on lease {shown}"
