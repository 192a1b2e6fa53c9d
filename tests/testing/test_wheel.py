"""Issue 38's "Done when", as docs/controllers.md tells a new user: pycm's wheel built offline
from this checkout, a fresh virtualenv (the lock's packages, pycm itself only from the wheel)
with the Website operator installed in it — the walkthrough's first block, run as written
into a temporary directory — and then, in that environment, with plain ``pytest``: a user's
own suite, and the operator's. pycm.testing's fixtures come from the wheel's pytest11 entry
point; nothing of pycm's checkout is on the path."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DOC = ROOT / "docs" / "controllers.md"
EXAMPLE = ROOT / "examples" / "website-operator"
# The walkthrough's install block starts with this line (docs/controllers.md, section 8).
BLOCK_START = "# a fresh virtualenv with pycm from a wheel, and the operator in it\n"
DOC_ENV, DOC_DIST = "ENV=/tmp/website-env\n", " -o dist\n"

USER_TEST = """
from stamp_controller import CONFIGMAP, STAMP


def test_stamped(pycm_cluster, pycm_namespace, pycm_manager):
    pycm_manager(["stamp"], descriptors=[STAMP])
    pycm_cluster.apply(CONFIGMAP, namespace=pycm_namespace)
    obj = pycm_cluster.wait_for_object(
        "v1", "ConfigMap", "hello", pycm_namespace, lambda o: o["data"].get("stamped") == "yes"
    )
    assert obj["data"]["message"] == "hi"


def test_pycm_comes_from_the_wheel():
    import pycm

    assert "site-packages" in pycm.__file__
"""


def _run(argv: list[str], cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "KUBECONFIG", "VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def _walkthrough_install_block() -> str:
    found = re.search(r"```sh\n(" + re.escape(BLOCK_START) + r"[^`]*?)```", DOC.read_text())
    assert found is not None, "docs/controllers.md lost the walkthrough's install block"
    return found.group(1)


@dataclass(frozen=True)
class FreshEnv:
    python: Path
    wheel: Path
    tmp: Path


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> FreshEnv:
    """The walkthrough's install block run as written, from the repository's root, with its
    two paths (the environment, the wheel's folder) moved into a temporary directory."""
    tmp = tmp_path_factory.mktemp("wheel")
    block = _walkthrough_install_block()
    assert DOC_ENV in block and DOC_DIST in block, block
    dist = tmp / "dist"
    script = (
        block.replace(DOC_ENV, f"ENV={shlex.quote(str(tmp / 'env'))}\n")
        .replace(DOC_DIST, f" -o {shlex.quote(str(dist))}\n")
        .replace(" dist/pycm-", f" {shlex.quote(str(dist))}/pycm-")
    )
    ran = _run(["bash", "-euo", "pipefail", "-c", script], ROOT)
    assert ran.returncode == 0, f"{script}\n{ran.stdout}\n{ran.stderr}"
    (wheel,) = dist.glob("pycm-*.whl")
    return FreshEnv(tmp / "env" / "bin" / "python", wheel, tmp)


@pytest.mark.e2e
def test_wheel_ships_pycm_testing_and_a_user_suite_runs_with_plain_pytest(
    fresh_env: FreshEnv,
) -> None:
    with zipfile.ZipFile(fresh_env.wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "pycm/testing/plugin.py" in names
        assert "[pytest11]\npycm = pycm.testing.plugin" in zf.read(entry_points).decode()

    suite = fresh_env.tmp / "suite"
    suite.mkdir()
    shutil.copy(HERE / "stamp_controller.py", suite / "stamp_controller.py")
    (suite / "test_user.py").write_text(USER_TEST)
    pytest_ = fresh_env.python.parent / "pytest"
    ran = _run([str(pytest_), "-q", "-p", "no:cacheprovider"], suite)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "2 passed" in ran.stdout


@pytest.mark.e2e
def test_walkthroughs_fresh_env_runs_the_website_operators_suite_with_plain_pytest(
    fresh_env: FreshEnv,
) -> None:
    """The operator installed by the documented command is a plugin of the wheel's pycm, and
    its suite passes with the environment's ``pytest`` in its directory."""
    listed = _run([str(fresh_env.python), "-m", "pycm", "run", "--help"], fresh_env.tmp)
    assert listed.returncode == 0, listed.stderr
    assert "website from distribution pycm-website-operator 0.1.0" in listed.stdout
    pytest_ = fresh_env.python.parent / "pytest"
    ran = _run([str(pytest_), "-q", "-p", "no:cacheprovider"], EXAMPLE, timeout=300)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert "3 passed" in ran.stdout
