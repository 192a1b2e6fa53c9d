"""Bad files and flags given to the real ``pycm`` command: one clear error line, exit status 2,
never a traceback — for every subcommand that takes a kubeconfig, a --trace-file or an
--otlp-endpoint (``pycm run``, ``pycm top``, ``pycm lease watch``).

Each command line runs as ``python -m pycm`` in a process of its own, bounded (a command that
starts anyway is killed and fails its case). Most are forked from one fork server that imported
pycm once (tests/cli/forkserver.py: a fresh interpreter per case cost half a second of imports
each); one case of each command family also runs as a true subprocess, and must end exactly as
its forked twin did.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

import pycm
from tests.cli import forkserver

TIMEOUT = 60.0
# An address nothing listens on: a command that got past validation fails to connect (exit 1).
NOWHERE = "http://127.0.0.1:9"


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    mentions: str  # the error line names the culprit
    kubeconfig_env: str = ""  # KUBECONFIG for the command (else a path that does not exist)


def _files(tmp: Path) -> dict[str, str]:
    (tmp / "garbage.yaml").write_text("{{{ not: yaml: [\n  - ]]\n")
    (tmp / "list.yaml").write_text("- just\n- a list\n")
    (tmp / "shape.yaml").write_text("apiVersion: v1\nkind: Config\nclusters: 3\nusers: x\n")
    (tmp / "a-directory").mkdir()
    (tmp / "a-file").write_text("")
    return {
        "garbage": str(tmp / "garbage.yaml"),
        "missing": str(tmp / "no-such-kubeconfig"),
        # The tests run as root, who reads any file: a directory is what cannot be read.
        "unreadable": str(tmp / "a-directory"),
        "shape": str(tmp / "shape.yaml"),
        "list": str(tmp / "list.yaml"),
        "file": str(tmp / "a-file"),
    }


def _cases(f: dict[str, str]) -> list[Case]:
    run = ("run", "--leader-elect=false", "--secure-port=0", "--bind-address=127.0.0.1")
    cases: list[Case] = []
    for kind in ("garbage", "missing", "unreadable", "shape", "list"):
        kc = f[kind]
        cases += [
            Case(f"run-kubeconfig-{kind}", (*run, "--kubeconfig", kc), kc),
            Case(f"top-kubeconfig-{kind}", ("top", "--server", NOWHERE, "--kubeconfig", kc), kc),
            Case(
                f"lease-kubeconfig-{kind}",
                ("lease", "watch", "kube-system/x", "--once", "--kubeconfig", kc),
                kc,
            ),
        ]
    cases += [
        Case(
            f"run-{flag}-kubeconfig-{kind}",
            (*run, "--master", NOWHERE, f"--{flag}-kubeconfig", f[kind]),
            f[kind],
        )
        for flag in ("authentication", "authorization")
        for kind in ("garbage", "shape")
    ]
    cases += [
        # Found bad only at start-up (KUBECONFIG is read then): still a usage error.
        Case("run-KUBECONFIG-env-garbage", run, f["garbage"], kubeconfig_env=f["garbage"]),
        Case("run-KUBECONFIG-env-shape", run, f["shape"], kubeconfig_env=f["shape"]),
        Case(
            "run-trace-file-parent-is-a-file",
            (*run, "--master", NOWHERE, "--trace-file", f["file"] + "/trace.jsonl"),
            "--trace-file",
        ),
        Case(
            "run-trace-file-unwritable-dir",
            (*run, "--master", NOWHERE, "--trace-file", "/proc/pycm-trace.jsonl"),
            "--trace-file",
        ),
        Case(
            "run-trace-file-is-a-directory",
            (*run, "--master", NOWHERE, "--trace-file", f["unreadable"]),
            "--trace-file",
        ),
        Case(
            "run-otlp-endpoint-not-a-url",
            (*run, "--master", NOWHERE, "--otlp-endpoint", "not a url"),
            "--otlp-endpoint",
        ),
        Case(
            "run-otlp-endpoint-wrong-scheme",
            (*run, "--master", NOWHERE, "--otlp-endpoint", "ftp://127.0.0.1:4317"),
            "--otlp-endpoint",
        ),
        Case(
            "run-otlp-endpoint-bad-port",
            (*run, "--master", NOWHERE, "--otlp-endpoint", "http://127.0.0.1:99999"),
            "--otlp-endpoint",
        ),
    ]
    return cases


@dataclass
class Outcome:
    code: int | None
    stderr: str
    stdout: str


_KINDS = ("garbage", "missing", "unreadable", "shape", "list", "file")
CASE_IDS = [c.id for c in _cases({kind: kind for kind in _KINDS})]


# One case of each command family also runs as a true subprocess (a fresh interpreter: argv,
# exit status and stderr exactly as a user gets them); the KUBECONFIG one because the variable
# is read when the command starts, not when pycm is imported.
SUBPROCESS_CASES = (
    "run-KUBECONFIG-env-garbage",
    "top-kubeconfig-garbage",
    "lease-kubeconfig-missing",
)


@dataclass(frozen=True)
class Outcomes:
    forked: dict[str, tuple[Case, Outcome]]
    spawned: dict[str, tuple[Case, Outcome]]


@pytest.fixture(scope="module")
def outcomes_both(tmp_path_factory: pytest.TempPathFactory) -> Outcomes:
    tmp = tmp_path_factory.mktemp("bad-input")
    cases = _cases(_files(tmp))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBECONFIG", "OTEL_"))}
    env["KUBECONFIG"] = str(tmp / "no-such-env-kubeconfig")  # never the machine's own
    # The pycm under test, whatever the working directory (the commands run in ``tmp``).
    env["PYTHONPATH"] = os.pathsep.join([str(Path(pycm.__file__).parents[1]), *sys.path])

    def case_env(case: Case) -> dict[str, str]:
        return {**env, "KUBECONFIG": case.kubeconfig_env or env["KUBECONFIG"]}

    def spawn(case: Case) -> tuple[Case, Outcome]:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pycm", *case.argv],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                env=case_env(case),
                cwd=tmp,
                timeout=TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            return case, Outcome(None, str(exc.stderr or ""), str(exc.stdout or ""))
        return case, Outcome(done.returncode, done.stderr.decode(), done.stdout.decode())

    # The subprocesses and the fork server at once; a few processes at a time each (the
    # machine's two cores are shared).
    with ThreadPoolExecutor(max_workers=len(SUBPROCESS_CASES)) as pool:
        chosen = [case for case in cases if case.id in SUBPROCESS_CASES]
        spawning = pool.map(spawn, chosen)
        requests = [forkserver.Request(c.argv, case_env(c), str(tmp)) for c in cases]
        results = forkserver.run_all(requests, server_env=env, parallel=2, timeout=TIMEOUT)
        spawned = {case.id: (case, outcome) for case, outcome in spawning}
    forked = {
        case.id: (case, Outcome(result.code, result.stderr, result.stdout))
        for case, result in zip(cases, results, strict=True)
    }
    return Outcomes(forked, spawned)


@pytest.fixture(scope="module")
def outcomes(outcomes_both: Outcomes) -> dict[str, tuple[Case, Outcome]]:
    """Each case's outcome: the true subprocess's where the case ran as one."""
    return {**outcomes_both.forked, **outcomes_both.spawned}


def test_cli_bad_input_has_a_subprocess_case_per_command_family() -> None:
    families = {case_id.split("-", 1)[0] for case_id in CASE_IDS}
    assert {case_id.split("-", 1)[0] for case_id in SUBPROCESS_CASES} == families
    assert set(SUBPROCESS_CASES) <= set(CASE_IDS)


@pytest.mark.parametrize("case_id", SUBPROCESS_CASES)
def test_cli_bad_input_forked_command_ends_as_the_subprocess_did(
    outcomes_both: Outcomes, case_id: str
) -> None:
    _, spawned = outcomes_both.spawned[case_id]
    _, forked = outcomes_both.forked[case_id]
    assert forked.code == spawned.code
    assert _timeless(forked.stderr) == _timeless(spawned.stderr)
    assert forked.stdout == spawned.stdout


# klog's line header (``E1206 14:26:17``) carries the time the line was written.
_KLOG_HEADER = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d\d(\.\d+)?", re.MULTILINE)


def _timeless(stderr: str) -> str:
    return _KLOG_HEADER.sub(r"\1MMDD hh:mm:ss", stderr)


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_cli_bad_input_one_clear_line_exit_2(
    outcomes: dict[str, tuple[Case, Outcome]], case_id: str
) -> None:
    case, outcome = outcomes[case_id]
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert outcome.code == 2, (outcome.code, outcome.stderr)
    usage = ("Usage: ", "Run 'pycm ")  # cobra's two lines after a usage error
    errors = [line for line in outcome.stderr.splitlines() if line and not line.startswith(usage)]
    assert len(errors) == 1, outcome.stderr
    assert case.mentions in errors[0], errors[0]
