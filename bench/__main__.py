"""``python -m bench NAME [--size tiny|full]``: run a benchmark and print its BENCH lines."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

from bench.harness import SIZES, Figure

_NOT_BENCHMARKS = {"harness"}


def available() -> list[str]:
    here = Path(__file__).parent
    return sorted(
        m.name
        for m in pkgutil.iter_modules([str(here)])
        if not m.name.startswith("_") and m.name not in _NOT_BENCHMARKS
    )


def run_one(name: str, size: str) -> list[Figure]:
    module = importlib.import_module(f"bench.{name}")
    figures: list[Figure] = module.run(size)
    return figures


def main(argv: list[str] | None = None) -> int:
    names = available()
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("name", choices=[*names, "all"], help="the benchmark to run")
    parser.add_argument("--size", choices=SIZES, default="full")
    args = parser.parse_args(argv)
    selected = names if args.name == "all" else [args.name]
    for name in selected:
        print(f"# bench {name} (size {args.size})", flush=True)
        for figure in run_one(name, args.size):
            print(figure.line(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
