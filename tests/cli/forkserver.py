"""Run many ``python -m pycm`` command lines for the price of one interpreter start.

One child interpreter (the *fork server*) imports ``pycm`` and the command modules once, then
forks a process per command line. Each forked process becomes what ``python -m pycm ARGV`` would
be: its own environment, working directory, stdin from /dev/null, stdout and stderr to files, and
``pycm/__main__.py`` run as ``__main__`` by :mod:`runpy` (the ``-m`` machinery), whose
``SystemExit`` or uncaught exception ends the process through the interpreter's own exit path
(exit status, traceback on stderr, atexit, flushing) — the fork server's loop never catches it.
What a forked command cannot differ in from a fresh one is what it imported before forking;
tests/cli/test_bad_input.py runs some cases both ways and compares.

Protocol: a JSON list of requests on the server's stdin (``argv``, ``env``, ``cwd``), a JSON list
of results (``code``, ``stdout``, ``stderr``) on its stdout, in the same order; ``code`` is None
for a command killed at the timeout, minus the signal for one a signal ended (as subprocess's).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# The modules the command lines of the bad-input table load (the CLI, the commands it dispatches
# to, what they import when they run: the controller registry, the kubernetes package's config
# loader); importing them before forking is the whole point.
PRELOAD = (
    "pycm.cli",
    "pycm.app.command",
    "pycm.app.controllers",
    "pycm.leaderelection.watch",
    "tui.command",
    "kubernetes.config",
)

_SERVER = r'''
import gc, importlib, json, os, runpy, signal, sys, time

for name in sys.argv[1].split(","):
    importlib.import_module(name)
# What was imported moves to the collector's permanent generation: a forked child's collections
# (its interpreter's exit runs one) then never touch those objects, so never copy their pages
# (0.3 s of CPU a child without this, 0.04 s with it).
gc.freeze()
parallel, timeout = int(sys.argv[2]), float(sys.argv[3])
requests = json.load(sys.stdin)
scratch = sys.argv[4]


def become(i, request):
    """In the forked child: the process state ``python -m pycm ARGV`` starts with."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, stream in ((1, "stdout"), (2, "stderr")):
        out = os.open(f"{scratch}/{i}.{stream}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, fd)
        os.close(out)
    os.close(null)
    sys.stdin = open(0, closefd=False)
    sys.argv = ["-m", *request["argv"]]


running, codes, pending = {}, {}, list(enumerate(requests))
while pending or running:
    while pending and len(running) < parallel:
        i, request = pending.pop(0)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            become(i, request)
            runpy.run_module("pycm", run_name="__main__", alter_sys=True)
            raise SystemExit(0)  # (pycm/__main__.py always raises SystemExit)
        running[pid] = (i, time.monotonic())
    pid, status = os.waitpid(-1, os.WNOHANG)
    if pid:
        i, _ = running.pop(pid)
        codes[i] = os.waitstatus_to_exitcode(status)
        continue
    for pid, (i, started) in list(running.items()):
        if time.monotonic() - started > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            del running[pid]
            codes[i] = None
    time.sleep(0.005)


def read(i, stream):
    with open(f"{scratch}/{i}.{stream}", encoding="utf-8", errors="replace") as f:
        return f.read()


json.dump(
    [{"code": codes[i], "stdout": read(i, "stdout"), "stderr": read(i, "stderr")}
     for i in range(len(requests))],
    sys.stdout,
)
'''


@dataclass(frozen=True)
class Request:
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str


@dataclass(frozen=True)
class Result:
    code: int | None
    stdout: str
    stderr: str


def run_all(
    requests: Sequence[Request],
    *,
    server_env: dict[str, str],
    parallel: int = 4,
    timeout: float = 60.0,
    preload: Sequence[str] = PRELOAD,
) -> list[Result]:
    """Run each request's ``python -m pycm ARGV`` forked from one fork server; results in order."""
    payload = json.dumps([{"argv": r.argv, "env": r.env, "cwd": r.cwd} for r in requests])
    with tempfile.TemporaryDirectory(prefix="pycm-forkserver-") as scratch:
        argv = [sys.executable, "-c", _SERVER, ",".join(preload), str(parallel), str(timeout)]
        done = subprocess.run(
            [*argv, scratch],
            input=payload,
            capture_output=True,
            text=True,
            env=server_env,
            timeout=timeout * (len(requests) + 1),
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"the fork server failed ({done.returncode}):\n{done.stderr}")
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return [Result(r["code"], r["stdout"], r["stderr"]) for r in results]
