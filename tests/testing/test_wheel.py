"""pycm.testing ships in the wheel: built offline from this checkout, installed into a fresh
environment (the lock's dependencies, pycm itself only from the wheel), a user's suite there
runs with plain ``pytest`` — the fixtures come from the pytest11 entry point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

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


def _uv() -> str:
    found = ROOT / ".bootstrap" / "bin" / "uv"
    return str(found) if found.exists() else shutil.which("uv") or "uv"


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KUBECONFIG")}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, **kwargs.pop("env", {})},  # type: ignore[dict-item]
        **kwargs,  # type: ignore[arg-type]
    )


def test_wheel_ships_pycm_testing_and_a_user_suite_runs_with_plain_pytest(
    tmp_path: Path,
) -> None:
    dist = tmp_path / "dist"
    built = _run(
        [
            _uv(),
            "build",
            "--wheel",
            "--offline",
            "--no-build-isolation",
            "--python",
            sys.executable,
            "-o",
            str(dist),
            str(ROOT),
        ],
        cwd=ROOT,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("pycm-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "pycm/testing/plugin.py" in names
        assert "[pytest11]\npycm = pycm.testing.plugin" in zf.read(entry_points).decode()

    env_dir = tmp_path / "venv"
    synced = _run(
        [_uv(), "sync", "--frozen", "--offline", "--no-install-project", "-q"],
        cwd=ROOT,
        env={"UV_PROJECT_ENVIRONMENT": str(env_dir)},
    )
    assert synced.returncode == 0, synced.stderr
    python = env_dir / "bin" / "python"
    installed = _run(
        [_uv(), "pip", "install", "--offline", "--no-deps", "--python", str(python), str(wheel)]
    )
    assert installed.returncode == 0, installed.stderr

    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(HERE / "stamp_controller.py", suite / "stamp_controller.py")
    (suite / "test_user.py").write_text(USER_TEST)
    ran = _run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=suite)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "2 passed" in ran.stdout
