"""Issue 41: worker.py split by concept — every name keeps its import paths, and no module of
pycm.controller grows past the size that asks whether it is two concepts (STYLE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

import pycm.controller as api
import pycm.controller.worker as worker
from pycm.controller import gates, outcomes, reconcile

_MAX_LINES = 500


@pytest.mark.parametrize(
    ("name", "home"),
    [
        pytest.param("Result", reconcile, id="Result"),
        pytest.param("TerminalError", reconcile, id="TerminalError"),
        pytest.param("SyncHandler", reconcile, id="SyncHandler"),
        pytest.param("DEFAULT_MAX_RETRIES", reconcile, id="DEFAULT_MAX_RETRIES"),
        pytest.param("KeyGate", gates, id="KeyGate"),
        pytest.param("ReconcileGate", gates, id="ReconcileGate"),
    ],
)
def test_worker_names_moved_out_are_the_same_objects_from_the_worker(
    name: str, home: object
) -> None:
    assert getattr(worker, name) is getattr(home, name)
    assert name in worker.__all__


@pytest.mark.parametrize("name", ["Controller", "Result", "TerminalError", "Trigger"])
def test_public_api_names_are_the_workers(name: str) -> None:
    assert getattr(api, name) is getattr(worker, name)


def test_the_handling_logs_under_the_workers_logger_name() -> None:
    # Users filter on it (tests/controller/test_worker.py's caplog checks read it too).
    assert outcomes.log.name == "pycm.controller.worker"


def test_no_controller_module_is_over_500_lines() -> None:
    package = Path(api.__file__).parent
    sizes = {p.name: len(p.read_text().splitlines()) for p in package.glob("*.py")}
    assert sizes["worker.py"] > 0
    assert {name: n for name, n in sizes.items() if n > _MAX_LINES} == {}
