"""Write pytest's assertion-rewrite cache for every test module, on every core, before the suite.

pytest rewrites the asserts of each test module and conftest when it imports them and caches the
result (``__pycache__/*-pytest-<version>.pyc``). On a fresh clone the cache is empty, and every
pytest-xdist worker collects the whole suite at the same moment: four workers each rewrote all
~300 modules (~7 s of CPU each, more than half of a cold collection). ``make unit`` runs this
first: the rewriting is done once, spread over the cores, and the workers find it cached.

It writes exactly what pytest would (pytest's own rewriting and pyc functions, with the default
``enable_assertion_pass_hook = false`` this project keeps), and skips a module whose cached pyc
is current. The functions are pytest internals: if they change, this says so in one line and
exits 0: the suite is as correct without the cache, only slower.

``python -m tests.warm_rewrite [FOLDER]`` (default: tests).
"""

from __future__ import annotations

import fnmatch
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace

# pytest's python_files default (the project keeps it), the conftests and the plugin it loads
# with -p (pyproject.toml's addopts), which it also rewrites.
PATTERNS = ("test_*.py", "*_test.py", "conftest.py", "leakcheck.py")


def _rewrite(fn: str) -> bool:
    """Rewrite ``fn`` into pytest's cache unless its pyc is current; True if written."""
    from _pytest.assertion import rewrite

    path = Path(fn)
    cache_dir = rewrite.get_cache_dir(path)
    pyc = cache_dir / (path.name[:-3] + rewrite.PYC_TAIL)
    if rewrite._read_pyc(path, pyc) is not None:
        return False
    if not rewrite.try_makedirs(cache_dir):
        return False
    stat, code = rewrite._rewrite_test(path, None)  # (no config: the defaults)
    state = SimpleNamespace(trace=lambda _message: None)
    return bool(rewrite._write_pyc(state, code, stat, pyc))


def modules(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
        found += [
            os.path.join(folder, name)
            for name in files
            if any(fnmatch.fnmatch(name, pattern) for pattern in PATTERNS)
        ]
    return sorted(found)


def main(argv: list[str]) -> int:
    if sys.dont_write_bytecode:
        return 0  # (PYTHONDONTWRITEBYTECODE: no bytecode is written, pytest's cache included)
    files = modules(Path(argv[0] if argv else "tests").resolve())
    try:
        with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            written = sum(pool.map(_rewrite, files, chunksize=8))
    except (AttributeError, ImportError, TypeError) as exc:  # pytest's internals moved
        print(f"warm_rewrite: pytest's rewrite cache not warmed ({exc!r})", file=sys.stderr)
        return 0
    if written:
        print(f"warm_rewrite: {written} of {len(files)} test modules rewritten ahead")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
