"""``free_port`` picks a port below the kernel's ephemeral range, where no outgoing connection
can take it between the pick and the child's bind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pycm.util import ports


def test_a_port_is_free_and_below_the_ephemeral_range() -> None:
    low = ports._ephemeral_low()
    assert low is not None  # Linux reports its range; the tests run on Linux
    picked = {ports.free_port() for _ in range(20)}
    assert all(ports._LOWEST <= port < low for port in picked)
    assert len(picked) > 1  # random, not one fixed port every time
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", picked.pop()))


def test_a_port_someone_listens_on_is_never_picked(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        choices = iter([busy, busy, busy + 1 if busy + 1 < 65536 else busy - 1])
        monkeypatch.setattr(ports._pick, "randrange", lambda a, b: next(choices))
        monkeypatch.setattr(ports, "_ephemeral_low", lambda: 65535)
        assert ports.free_port() != busy


def test_without_a_known_range_the_kernel_picks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(ports, "_RANGE_FILE", tmp_path / "missing")
    assert ports._ephemeral_low() is None
    port = ports.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_a_narrow_range_below_the_ephemeral_falls_back_to_the_kernel(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    range_file = tmp_path / "range"
    range_file.write_text("11000\t60999\n")
    monkeypatch.setattr(ports, "_RANGE_FILE", range_file)
    assert ports.free_port() >= 11000
