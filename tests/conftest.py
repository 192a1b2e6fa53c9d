"""How the suite is spread over pytest-xdist's workers (``make test`` runs it on several).

The suite is mostly waiting: end-to-end tests start the emulator and real ``pycm`` processes and
wait for leases, rollouts and browsers (measured: ~820 s of its ~1300 s of test time is waiting, CPU
~490 s), so ``make test`` runs twice as many workers as cores, and one (2 cores: 5 workers, pytest
~305 s, where 4 took ~340–375 s; 6 made the lease-timed tests flake under the added contention).
Two rules keep that fast and honest:

- **Long tests first.** xdist hands tests out in collection order, as workers free up; a
  50-second soak collected last would run alone at the end. Tests that start processes (the
  ``e2e`` and ``browser`` markers, the benchmarks, the CLI's process tables) are moved to the
  front, so the short unit tests fill the gaps around them.
- **A module's shared fixture is made once.** xdist makes a module-scoped fixture on every
  worker that runs a test of that module (the CLI's table of 27 processes, a browser with three
  replicas, an emulator): such a module is one xdist group, run by one worker.
- **Lease timing is never shared.** The tests that assert leader-election timing (a takeover
  within the lease duration, a paused leader's exit) run three replicas with second-scale
  leases; two such tests at once on two cores make their own renews miss. They form one xdist
  group (``--dist loadgroup``): one worker runs them one after another, while the others run
  everything else.
"""

from __future__ import annotations

import pytest

# Modules whose tests assert leader-election timing across several replicas.
LEASE_TIMED = (
    "tests/e2e/test_leader_election.py",
    "tests/e2e/test_reconcile_gate_e2e.py",
    "tests/e2e/test_fencing_e2e.py",
    "tests/e2e/test_clock_skew_e2e.py",
    "tests/demo/",
    "tests/tui/test_demo_e2e.py",
    "tests/web/test_demo_dashboard.py",
)
# Tests inside those modules that start no replica (a scripted Lease and one `pycm lease watch`):
# nothing of theirs renews or waits out a term, so they need not queue behind the others.
NOT_LEASE_TIMED = ("tests/e2e/test_leader_election.py::test_lease_watch_",)
# Folders and modules that start processes without an e2e marker of their own.
PROCESS_HEAVY = ("tests/bench/", "tests/cli/", "tests/deploy/", "tests/app/test_plugins.py")


def _path(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _lease_timed(item: pytest.Item) -> bool:
    return _path(item).startswith(LEASE_TIMED) and not item.nodeid.startswith(NOT_LEASE_TIMED)


def _rank(item: pytest.Item) -> int:
    path = _path(item)
    if _lease_timed(item):
        return 0  # one worker's queue: start it at once
    if item.get_closest_marker("e2e") or item.get_closest_marker("browser"):
        return 1
    if path.startswith(PROCESS_HEAVY):
        return 1
    return 2


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        defs and defs[-1].scope in ("module", "package") for defs in info.name2fixturedefs.values()
    )


# (tryfirst: xdist's own hook turns the xdist_group markers into the tests' groups; it must
# find them already there.)
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # (stable: each rank keeps its collection order)
    for item in items:
        path = _path(item)
        if _lease_timed(item):
            item.add_marker(pytest.mark.xdist_group("lease-timed"))
        elif _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(path))
