"""``python -m pycm.sim``: the ``pycm sim`` command on its own (no other subcommand imported)."""

from __future__ import annotations

import argparse
import sys

from pycm.sim import command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pycm.sim")
    subparsers = parser.add_subparsers(dest="command")
    command.add_subcommand(subparsers)
    args = parser.parse_args(["sim", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
