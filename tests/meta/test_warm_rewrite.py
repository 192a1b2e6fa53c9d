"""tests/warm_rewrite.py (``make unit``'s first step) caches what pytest itself would: the same
rewritten code, under the name pytest reads, skipped once current."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from _pytest.assertion import rewrite

from tests import warm_rewrite

SOURCE = "def test_x():\n    a, b = 1, 2\n    assert a == b, 'differ'\n"


def _cached(path: Path) -> Path:
    return path.parent / "__pycache__" / (path.name[:-3] + rewrite.PYC_TAIL)


@pytest.fixture
def writes_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    """As under ``make unit`` (PYTHONDONTWRITEBYTECODE unset), whatever this run's setting."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


@pytest.mark.usefixtures("writes_bytecode")
def test_warm_rewrite_caches_pytests_own_rewrite_of_each_test_module(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    module = tmp_path / "test_sample.py"
    module.write_text(SOURCE)
    (tmp_path / "conftest.py").write_text("X = 1\nassert X\n")
    (tmp_path / "helper.py").write_text("assert True\n")

    assert warm_rewrite.main([str(tmp_path)]) == 0

    assert _cached(tmp_path / "conftest.py").exists()
    assert not _cached(tmp_path / "helper.py").exists(), "pytest does not rewrite helpers"
    cached = rewrite._read_pyc(module, _cached(module))
    assert cached is not None, "pytest would not accept the cached pyc"
    _, expected = rewrite._rewrite_test(module, request.config)
    # (code objects compare by their bytecode, constants, names and line tables)
    assert cached == expected
    assert cached.co_consts != compile(SOURCE, str(module), "exec").co_consts, "not rewritten"


@pytest.mark.usefixtures("writes_bytecode")
def test_warm_rewrite_skips_a_current_pyc_and_redoes_a_stale_one(tmp_path: Path) -> None:
    module = tmp_path / "test_sample.py"
    module.write_text(SOURCE)
    assert warm_rewrite.main([str(tmp_path)]) == 0
    pyc = _cached(module)
    first = pyc.stat().st_mtime_ns
    os.utime(pyc, ns=(first - 10**9, first - 10**9))

    assert warm_rewrite.main([str(tmp_path)]) == 0
    assert pyc.stat().st_mtime_ns == first - 10**9, "a current pyc was written again"

    module.write_text(SOURCE + "\n\ndef test_y():\n    assert 1\n")
    assert warm_rewrite.main([str(tmp_path)]) == 0
    cached = rewrite._read_pyc(module, pyc)
    assert cached is not None and "test_y" in cached.co_names


def test_warm_rewrite_writes_nothing_where_bytecode_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (PYTHONDONTWRITEBYTECODE: pytest writes no cache then, and neither does this)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    module = tmp_path / "test_sample.py"
    module.write_text(SOURCE)
    assert warm_rewrite.main([str(tmp_path)]) == 0
    assert not (tmp_path / "__pycache__").exists()
