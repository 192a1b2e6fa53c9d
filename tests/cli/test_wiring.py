"""``pycm.cli`` wires the viewers into the commands that open them explicitly, as arguments of
their ``add_subcommand`` (issue 41: no module-global setters in the composition root)."""

from __future__ import annotations

import argparse
import functools

from pycm import cli
from pycm.demo import command as demo_command


def test_cli_hands_the_demo_its_tui_and_dashboard() -> None:
    run = cli.build_parser().parse_args(["demo", "--no-tui"]).func
    assert isinstance(run, functools.partial) and run.func is demo_command.run
    assert run.keywords == {
        "viewers": demo_command.Viewers(tui=cli._launch_top, dashboard=cli._launch_dashboard)
    }


def test_demo_registered_without_viewers_opens_none() -> None:
    # Another composition (a test, an embedding) that hands nothing gets a demo without viewers.
    parser = argparse.ArgumentParser()
    demo_command.add_subcommand(parser.add_subparsers())
    run = parser.parse_args(["demo"]).func
    assert run.keywords == {"viewers": demo_command.Viewers()}
