"""deploy/Containerfile and `make image`.

No image is built here (no container engine or registry in CI): `make image` runs against fake
engines on a PATH of its own, the Containerfile's shape is checked against the manifests and the
Makefile, and its build stage's uv commands (export from the lock, build the wheel) run for real.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.deploy.conftest import DEPLOY, ROOT

CONTAINERFILE = DEPLOY / "Containerfile"
UV = ROOT / ".bootstrap" / "bin" / "uv"


def _path_with(tmp: Path, *engines: str) -> str:
    """A PATH holding only what the image recipe needs, plus fake engines that log their args."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for tool in ("make", "sh", "sed"):
        found = shutil.which(tool)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    for engine in engines:
        fake = bin_dir / engine
        fake.write_text(f'#!/bin/sh\necho "{engine} $*" >> "{tmp}/calls"\n')
        fake.chmod(0o755)
    return str(bin_dir)


def _make_image(tmp: Path, *engines: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": _path_with(tmp, *engines), "HOME": str(tmp)}
    return subprocess.run(
        ["make", "--no-print-directory", "image"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_make_image_without_docker_or_podman_says_so_and_fails(tmp_path: Path) -> None:
    result = _make_image(tmp_path)
    assert result.returncode != 0
    assert "make image: neither docker nor podman is installed" in result.stderr
    assert not (tmp_path / "calls").exists()


@pytest.mark.parametrize(
    ("engines", "used"),
    [
        pytest.param(("docker",), "docker", id="docker"),
        pytest.param(("podman",), "podman", id="podman"),
        pytest.param(("docker", "podman"), "docker", id="docker-first"),
    ],
)
def test_make_image_builds_the_containerfile_with_the_engine_found(
    tmp_path: Path, engines: tuple[str, ...], used: str
) -> None:
    result = _make_image(tmp_path, *engines)
    assert result.returncode == 0, result.stderr
    want = f"{used} build -t localhost/pycm:0.1.0 -f deploy/Containerfile ."
    assert (tmp_path / "calls").read_text().splitlines() == [want]
    assert f"make image: {want}" in result.stdout


def test_containerfile_is_multi_stage_non_root_with_pycm_entrypoint() -> None:
    text = CONTAINERFILE.read_text()
    stages = re.findall(r"^FROM (\S+)(?: AS (\w+))?$", text, re.MULTILINE)
    assert [name for _, name in stages] == ["build", ""]
    assert all(image == "${PYTHON_IMAGE}" for image, _ in stages)
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.\d+-slim", text, re.MULTILINE)
    assert 'ENTRYPOINT ["pycm"]' in text
    assert "COPY --from=build /opt/pycm /opt/pycm" in text
    # The same uv as the Makefile bootstraps; dependencies from the lock, hashes required.
    uv_version = re.search(r"^UV_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert uv_version is not None
    assert f'"uv=={uv_version.group(1)}"' in text
    assert "uv export --frozen --no-dev" in text and "--require-hashes" in text
    # Every package the wheel holds is copied into the build stage.
    wheel_packages = re.search(r"packages = \[(.*)\]", (ROOT / "pyproject.toml").read_text())
    assert wheel_packages is not None
    for package in re.findall(r'"(\w+)"', wheel_packages.group(1)):
        assert f"COPY {package} ./{package}" in text
    # The user is the numeric uid the Deployment runs as (runAsNonRoot needs a number).
    user = re.search(r"^USER (\d+):(\d+)$", text, re.MULTILINE)
    assert user is not None and user.group(1) != "0"
    deployment = yaml.safe_load((DEPLOY / "kubernetes" / "base" / "deployment.yaml").read_text())
    pod_security = deployment["spec"]["template"]["spec"]["securityContext"]
    assert (str(pod_security["runAsUser"]), str(pod_security["runAsGroup"])) == user.groups()


def test_containerfile_build_stage_commands_export_the_lock_and_build_the_wheel(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    export = subprocess.run(
        [
            *(str(UV), "export", "--frozen", "--no-dev", "--no-emit-project"),
            *("--format", "requirements-txt", "-o", str(tmp_path / "requirements.txt")),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert export.returncode == 0, export.stderr
    requirements = (tmp_path / "requirements.txt").read_text()
    pinned = re.findall(r"^([a-z0-9_.-]+)==", requirements, re.MULTILINE)
    assert {"kubernetes", "httpx", "orjson", "prometheus-client"} <= set(pinned)
    assert not {"pytest", "mypy", "ruff", "kubernetes-validate"} & set(pinned)
    assert requirements.count("--hash=sha256:") >= len(pinned)
    build = subprocess.run(
        [str(UV), "build", "--wheel", "--out-dir", str(tmp_path / "dist")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("pycm-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "pycm = pycm.cli:entry" in z.read(entry_points).decode()
    assert "pycm/app/run.py" in names and "pycm/sim/server.py" in names
