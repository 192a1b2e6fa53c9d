"""``pycm`` imports only the module of the command a command line names: the others are listed
by name and help alone, and what they list is what their modules register."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from pycm import cli


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action


def test_lazy_parser_help_is_the_full_parsers_help() -> None:
    assert cli.build_parser(every=False).format_help() == cli.build_parser().format_help()


def test_lazy_parser_lists_each_command_with_its_modules_help_line() -> None:
    full = {a.dest: a.help for a in _subcommands(cli.build_parser())._choices_actions}
    lazy = {a.dest: a.help for a in _subcommands(cli.build_parser(every=False))._choices_actions}
    assert list(lazy) == list(full)
    assert lazy == full


@pytest.mark.parametrize("name", list(cli._COMMANDS))
def test_lazy_parser_registers_the_chosen_command_in_full(name: str) -> None:
    lazy = _subcommands(cli.build_parser(name, every=False)).choices[name]
    full = _subcommands(cli.build_parser()).choices[name]
    assert lazy.format_help() == full.format_help()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param([], None, id="nothing"),
        pytest.param(["--help"], None, id="help"),
        pytest.param(["--version", "run"], "run", id="option-then-command"),
        pytest.param(["top", "--server", "x"], "top", id="command-first"),
        pytest.param(["lease", "watch", "a/b"], "lease", id="nested"),
        pytest.param(["nosuch", "run"], None, id="unknown-command"),
        pytest.param(["--", "run"], None, id="after-double-dash"),
    ],
)
def test_chosen_command_is_the_first_non_option(argv: list[str], expected: str | None) -> None:
    assert cli.chosen_command(argv) == expected


def _loaded_after(argv: list[str]) -> set[str]:
    code = (
        "import sys, contextlib, io\n"
        "from pycm.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('\\n'.join(sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(done.stdout.split())


def test_pycm_help_imports_no_command_module() -> None:
    loaded = _loaded_after(["--help"])
    heavy = {"pycm.app.command", "pycm.demo.command", "pycm.sim.command", "tui", "web"}
    heavy |= {"uvicorn", "textual", "opentelemetry", "pycm.trace.kinds", "httpx"}
    assert not heavy & loaded, sorted(heavy & loaded)


def test_pycm_sim_help_imports_neither_the_manager_nor_the_viewers() -> None:
    loaded = _loaded_after(["sim", "--help"])
    assert "pycm.sim.command" in loaded
    unwanted = {"pycm.app.command", "pycm.demo.command", "tui", "web", "textual", "opentelemetry"}
    assert not unwanted & loaded, sorted(unwanted & loaded)
