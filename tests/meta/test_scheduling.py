"""tests/conftest.py's queue of leader-election timing tests: whole modules, less the tests in
them that start no replica."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests import conftest


def _item(nodeid: str) -> Any:
    return SimpleNamespace(nodeid=nodeid)


@pytest.mark.parametrize(
    ("nodeid", "timed"),
    [
        pytest.param(
            "tests/e2e/test_leader_election.py::test_sigkill_leader_another_leads", True, id="kill"
        ),
        pytest.param("tests/demo/test_demo.py::test_demo_duration", True, id="demo-folder"),
        pytest.param(
            "tests/e2e/test_leader_election.py::test_lease_watch_once_prints", False, id="watch"
        ),
        pytest.param("tests/e2e/test_causes_e2e.py::test_x", False, id="other-e2e"),
    ],
)
def test_lease_timed_queue_holds_the_replica_tests_only(nodeid: str, timed: bool) -> None:
    assert conftest._lease_timed(_item(nodeid)) is timed
