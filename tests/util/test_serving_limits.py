"""ServingLimits validation, fit_open_files against RLIMIT_NOFILE, and malloc_trim's wrapper."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Iterator

import pytest

from pycm.util import serving_limits
from pycm.util.malloc import release_free_memory
from pycm.util.serving_limits import ConnectionGate, ServingLimits, fit_open_files


@pytest.fixture
def nofile() -> Iterator[tuple[int, int]]:
    """RLIMIT_NOFILE, restored after the test."""
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield limits
    resource.setrlimit(resource.RLIMIT_NOFILE, limits)


def test_serving_limits_validate_every_problem() -> None:
    limits = ServingLimits(max_connections=-1, read_header_timeout=-1, max_header_bytes=10)
    assert limits.validate() == [
        "max_connections must not be negative, got -1",
        "read_header_timeout must not be negative",
        "max_header_bytes must be at least 1024, got 10",
    ]
    assert ServingLimits().validate() == []


def test_fit_open_files_raises_the_soft_limit_toward_the_hard_one(
    nofile: tuple[int, int],
) -> None:
    _, hard = nofile
    if hard != resource.RLIM_INFINITY and hard < 2000:
        pytest.skip("the hard open-files limit is too low here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))
    limits = ServingLimits(max_connections=1000)
    assert fit_open_files(limits) == limits
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 1000 + 256


def test_fit_open_files_lowers_the_cap_when_the_hard_limit_is_too_low(
    nofile: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    _, hard = nofile
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip("the hard open-files limit is too low here")
    # Lowering the hard limit cannot be undone without privileges: only the soft one moves.
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    fitted = fit_open_files(ServingLimits(max_connections=10**9))
    assert fitted.max_connections < 10**9
    assert fitted.max_connections + 256 <= resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert "holds at most" in caplog.text


def test_fit_open_files_no_cap_is_left_alone() -> None:
    assert fit_open_files(ServingLimits(max_connections=0)).max_connections == 0


def test_release_free_memory_runs_on_glibc() -> None:
    import platform

    expected = platform.libc_ver()[0] == "glibc"
    assert release_free_memory() is expected


class _Transport:
    def abort(self) -> None:
        pass


@pytest.mark.asyncio
async def test_gate_returns_memory_after_a_burst_not_under_churn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trims: list[int] = []

    def trim() -> bool:
        trims.append(1)
        return True

    monkeypatch.setattr(serving_limits, "release_free_memory", trim)
    monkeypatch.setattr(serving_limits, "_TRIM_DELAY", 0.0)
    gate = ConnectionGate(asyncio.Protocol, ServingLimits(max_connections=0))
    for _ in range(1000):  # a connection per request: memory is reused, nothing to give back
        gate._admit(_Transport())  # type: ignore[arg-type]
        gate._release()
    await asyncio.sleep(0.01)
    assert trims == []
    for _ in range(300):  # a burst, then it ends
        gate._admit(_Transport())  # type: ignore[arg-type]
    for _ in range(300):
        gate._release()
    await asyncio.sleep(0.01)
    assert (trims, gate.active) == ([1], 0)
