"""The ``pycm`` process entry (:func:`pycm.cli.entry`): the chosen command's modules are loaded
before :func:`~pycm.cli.main` runs, with the collector paused and what they made frozen; help
and the version load nothing extra; a module that fails to load is still reported by main."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

from pycm import cli

# Runs entry() with the given arguments in a fresh interpreter and prints what it left behind.
_PROBE = """
import gc, json, sys
sys.argv = ["pycm", *json.loads(sys.argv[1])]
from pycm import cli
loads = json.loads({loads!r})
if loads is not None:
    cli._LOADS["run"] = tuple(loads)
try:
    status = cli.entry()
except SystemExit as exc:
    status = exc.code
print(json.dumps({{
    "status": status,
    "manager_loaded": "pycm.app.run" in sys.modules,
    "gc_enabled": gc.isenabled(),
    "frozen": gc.get_freeze_count(),
}}))
"""


def _entry(argv: list[str], loads: list[str] | None = None) -> tuple[dict[str, object], str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(loads=json.dumps(loads)), json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    last = done.stdout.strip().splitlines()[-1]
    return json.loads(last), done.stderr


def test_every_command_names_what_its_process_loads_and_each_module_exists() -> None:
    assert set(cli._LOADS) == set(cli._COMMANDS)
    # A misspelt name would only lose the paused load (entry stops at it), silently.
    for modules in cli._LOADS.values():
        for name in modules:
            importlib.import_module(name)


def test_run_loads_the_manager_frozen_and_leaves_the_collector_on() -> None:
    # A usage error: main runs after the load and answers as always (exit 2, cobra's lines).
    found, stderr = _entry(["run", "--no-such-flag"])
    assert found["status"] == 2, stderr
    assert "unknown flag: --no-such-flag" in stderr
    assert found["manager_loaded"] is True
    assert found["gc_enabled"] is True
    assert isinstance(found["frozen"], int) and found["frozen"] > 50_000  # ~96k


def test_help_loads_nothing_extra_and_freezes_nothing() -> None:
    found, stderr = _entry(["run", "--help"])
    assert found["status"] == 0, stderr
    assert found["manager_loaded"] is False
    assert found["frozen"] == 0
    assert found["gc_enabled"] is True


def test_a_module_that_fails_to_load_is_left_to_main() -> None:
    # The load stops at the first failure (not a traceback), and main runs on: here the
    # command's own modules load fine, so the usage error is answered as before.
    found, stderr = _entry(["run", "--no-such-flag"], loads=["pycm.no_such_module", "pycm.app.run"])
    assert "Traceback" not in stderr
    assert found["status"] == 2, stderr
    assert found["manager_loaded"] is False
    assert found["gc_enabled"] is True
