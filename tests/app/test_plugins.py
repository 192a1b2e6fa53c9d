"""Controller plugins: found through importlib.metadata, listed, resolved, run; broken ones
fail alone (an error, exit 2 naming the distribution, only when --controllers names them; else
one warning); controllers registered in code.

The example plugin (examples/echo-controller) is really installed — built offline with the
project's own hatchling, into a temporary target put on PYTHONPATH — so its entry point is
discovered exactly as a user's would be.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from pycm.trace.recorder import read_events
from tests.support.manager import poll, start_manager, stop_manager
from tests.support.plugins import install_example

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "echo-controller"


@pytest.fixture(scope="module")
def echo_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/echo-controller installed into a fresh directory (no network: no build
    isolation, hatchling from the venv, no dependencies)."""
    target = install_example(EXAMPLE, tmp_path_factory.mktemp("echo-plugin"))
    assert (target / "pycm_echo" / "controller.py").exists()
    return target


def _pycm_run(args: list[str], pythonpath: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PYTHONPATH")}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [sys.executable, "-m", "pycm", "run", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


def _dist(site: Path, name: str, module: str, source: str) -> None:
    """A minimal installed distribution: dist-info with one pycm.controllers entry point."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[pycm.controllers]\nbad = {module}:descriptor\n")
    (site / f"{module}.py").write_text(textwrap.dedent(source))


def _install_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, module: str, source: str
) -> None:
    """:func:`_dist` in a fresh site directory that the ``pycm run`` started next finds on its
    PYTHONPATH."""
    site = tmp_path / "site"
    site.mkdir()
    _dist(site, name, module, source)
    monkeypatch.setenv("PYTHONPATH", str(site))


# -- discovery and help ----------------------------------------------------------------------


def test_pycm_run_help_plugin_installed_listed_beside_builtins(echo_target: Path) -> None:
    proc = _pycm_run(["--help"], echo_target)
    assert proc.returncode == 0, proc.stderr
    assert "All controllers: deployment, echo, replicaset" in proc.stdout
    assert "Disabled-by-default controllers: echo" in proc.stdout
    assert "Plugin controllers: echo from distribution pycm-echo-controller 0.1.0" in proc.stdout


def test_pycm_run_help_no_plugin_only_builtins() -> None:
    proc = _pycm_run(["--help"], None)
    assert proc.returncode == 0, proc.stderr
    assert "All controllers: deployment, replicaset (default [*])\n" in proc.stdout
    assert "Plugin controllers" not in proc.stdout


# -- broken plugins ---------------------------------------------------------------------------


USAGE = "Usage: pycm run [flags]\nRun 'pycm run --help' for usage.\n"


def test_pycm_run_plugin_fails_to_import_exit_2_when_named(tmp_path: Path) -> None:
    _dist(tmp_path, "pycm-broken-plugin", "pycm_broken_plugin", "import no_such_module_here\n")
    proc = _pycm_run(["--controllers=*,bad"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (
        "Error: plugin controller 'bad' (pycm_broken_plugin:descriptor) from distribution "
        "pycm-broken-plugin 1.0 failed to load: ModuleNotFoundError: "
        "No module named 'no_such_module_here'\n" + USAGE
    )


_ENABLED = """
import sys
from pycm.app import command

def runner(config):
    print(",".join(config.controllers.enabled))
    return 0

sys.exit(command.run(sys.argv[1:], runner=runner))
"""


@pytest.mark.parametrize("controllers", ["deployment", "*", "*,-bad"])
def test_pycm_run_broken_plugin_not_named_is_one_warning_and_the_rest_runs(
    tmp_path: Path, controllers: str
) -> None:
    """One broken entry point stopped even --controllers=deployment (exit 2)."""
    _dist(tmp_path, "pycm-broken-plugin", "pycm_broken_plugin", "import no_such_module_here\n")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PYTHONPATH"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", _ENABLED, f"--controllers={controllers}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    expected = "deployment" if controllers == "deployment" else "deployment,replicaset"
    assert proc.stdout == f"{expected}\n"
    assert proc.stderr == (
        "Warning: plugin controller 'bad' (pycm_broken_plugin:descriptor) from distribution "
        "pycm-broken-plugin 1.0 failed to load: ModuleNotFoundError: No module named "
        "'no_such_module_here' (its controllers are not available; the others run)\n"
    )


@pytest.mark.parametrize("flag", ["--help", "-h", "--version", "--help=true"])
def test_pycm_run_help_and_version_answer_with_a_broken_plugin(
    tmp_path: Path, flag: str, echo_target: Path
) -> None:
    """--help hid every plugin controller, the healthy ones too: it lists every controller
    that loaded and names the broken distribution."""
    site = tmp_path / "site"
    shutil.copytree(echo_target, site)
    _dist(site, "pycm-broken-plugin", "pycm_broken_plugin", "import no_such_module_here\n")
    proc = _pycm_run([flag], site)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    if flag == "--version":
        assert proc.stdout.startswith("pycm ")
    else:
        assert "All controllers: deployment, echo, replicaset\n" in proc.stdout
        assert "Plugin controllers: echo from distribution pycm-echo-controller" in proc.stdout
        assert (
            "Plugins that failed to load: bad from distribution pycm-broken-plugin 1.0"
            in proc.stdout
        )
    # Anything else is still refused.
    assert _pycm_run(["--", flag], site).returncode == 2


def test_pycm_run_plugin_name_collides_with_builtin_exit_2_when_named(tmp_path: Path) -> None:
    _dist(
        tmp_path,
        "pycm-greedy-plugin",
        "pycm_greedy_plugin",
        """
        from pycm.controller import ControllerDescriptor

        async def init(ctx):
            return None

        descriptor = ControllerDescriptor("mine", init, aliases=("deployment",))
        """,
    )
    proc = _pycm_run(["--controllers=bad"], tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr == (
        "Error: plugin controller 'bad' (pycm_greedy_plugin:descriptor) from distribution "
        "pycm-greedy-plugin 1.0: controller name or alias 'deployment' is already registered "
        "(by 'deployment', built-in)\n" + USAGE
    )
    # Its controller's own name is unknown (it never registered); the error says which
    # plugin failed, so the user can tell why.
    proc = _pycm_run(["--controllers=mine"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith('Error: "mine" is not in the list of known controllers')
    assert "plugins that failed to load: bad from distribution pycm-greedy-plugin" in proc.stderr


def test_pycm_run_plugin_not_a_descriptor_exit_2_when_named(tmp_path: Path) -> None:
    _dist(tmp_path, "pycm-odd-plugin", "pycm_odd_plugin", "descriptor = 42\n")
    proc = _pycm_run(["--controllers=bad"], tmp_path)
    assert proc.returncode == 2
    assert "from distribution pycm-odd-plugin 1.0 is a int, not a" in proc.stderr


# -- registered in code (the bug: the built-ins became unknown) --------------------------------

_IN_CODE = """
import sys
from pycm.app import command
from pycm.app.registry import ControllerDescriptor, default_registry

async def init(ctx):
    return None

default_registry().register(ControllerDescriptor("mine", init))

def runner(config):
    print(",".join(config.controllers.enabled))
    return 0

sys.exit(command.run(["--controllers=mine,deployment"], runner=runner))
"""


def test_command_controller_registered_in_code_builtins_stay_known() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", _IN_CODE],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == "deployment,mine\n"


# -- the example, end to end ------------------------------------------------------------------


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False, pod_ready_delay=0.0) as emu:
        yield emu


def _configmap(name: str, *, labelled: bool, message: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labelled:
        meta["labels"] = {"pycm.dev/echo": "true"}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": {} if message is None else {"message": message},
    }


def _annotation(cm: dict[str, Any]) -> str | None:
    return ((cm.get("metadata") or {}).get("annotations") or {}).get("pycm.dev/echo")


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_echo_plugin_pycm_run_star_echo_reconciles_and_is_observed(
    echo_target: Path, cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(echo_target))
    manager = start_manager(cluster.kubeconfig_path, tmp_path, "--controllers=*,echo")
    admin = {"Authorization": f"Bearer {cluster.admin_token}"}
    path = "/api/v1/namespaces/default/configmaps"
    try:
        async with (
            httpx.AsyncClient(base_url=cluster.url, headers=admin) as api,
            httpx.AsyncClient(verify=False, timeout=5, headers=admin) as http,
        ):

            async def get(name: str) -> dict[str, Any]:
                r = await api.get(f"{path}/{name}")
                assert r.status_code == 200, r.text
                body: dict[str, Any] = r.json()
                return body

            for cm in (
                _configmap("hello", labelled=True, message="hi there"),
                _configmap("plain", labelled=False, message="not for echo"),
            ):
                assert (await api.post(path, json=cm)).status_code == 201

            async def echoed() -> bool:
                assert manager.proc.poll() is None, manager.log.read_text()
                return _annotation(await get("hello")) == "hi there"

            await poll(echoed, timeout=30)

            # The key removed: the annotation goes too.
            removed = await api.patch(
                f"{path}/hello",
                json={"data": {"message": None}},
                headers={"Content-Type": "application/merge-patch+json"},
            )
            assert removed.status_code == 200, removed.text

            async def cleared() -> bool:
                return _annotation(await get("hello")) is None

            await poll(cleared, timeout=30)

            async def events() -> list[dict[str, Any]]:
                items = (await api.get("/api/v1/namespaces/default/events")).json()["items"]
                return [e for e in items if e.get("reason") == "Echoed"]

            echoed_events = await poll(events)
            assert all(e["type"] == "Normal" for e in echoed_events)
            assert {e["involvedObject"]["name"] for e in echoed_events} == {"hello"}
            assert _annotation(await get("plain")) is None  # not labelled: ignored

            # Seen like a built-in: in the state snapshot and the metrics.
            state = (await http.get(f"{manager.url}/debug/pycm/state")).json()
            echo = [
                by_name["echo"]
                for by_name in state["controllers"].values()
                if isinstance(by_name, dict) and "echo" in by_name
            ]
            assert echo and echo[0]["reconciles"] >= 2, state
            metrics = (await http.get(f"{manager.url}/metrics")).text
            assert 'controller_runtime_reconcile_total{controller="echo",result="success"}' in (
                metrics
            )
            assert 'workqueue_adds_total{name="echo"}' in metrics
            verbose = (await http.get(f"{manager.url}/readyz?verbose")).text
            assert "[+]workqueues ok" in verbose
    finally:
        code = await stop_manager(manager)
    assert code == 0, manager.log.read_text()
    ends = [e for e in read_events(manager.trace) if e.KIND == "reconcile.end"]
    actions = {e.action for e in ends if e.controller == "echo"}  # type: ignore[attr-defined]
    assert {"echoed", "cleared"} <= actions


# With --leader-elect=true (the default) the controllers start inside OnStartedLeading; a failed
# start must read the same there: one line, exit 1, no traceback of the election task.
ELECTION = {
    "no-election": (),
    "leading": (
        "--leader-elect=true",
        "--leader-elect-lease-duration=4s",
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=500ms",
    ),
}


async def _until_readyz(manager: Any, accept: Callable[[httpx.Response], bool]) -> None:
    """Poll the running manager's ``/readyz?verbose`` until ``accept`` takes the answer (it
    must not exit meanwhile)."""
    async with httpx.AsyncClient(verify=False, timeout=5) as http:

        async def accepted() -> bool:
            assert manager.proc.poll() is None, manager.log.read_text()
            try:
                return accept(await http.get(f"{manager.url}/readyz?verbose"))
            except httpx.TransportError:
                return False

        await poll(accepted, timeout=30)


async def _run_until_exit(cluster: Any, tmp_path: Path, *args: str) -> tuple[int, str]:
    manager = start_manager(cluster.kubeconfig_path, tmp_path, *args)
    try:
        code = await asyncio.to_thread(manager.proc.wait, 60)
    finally:
        await stop_manager(manager)
    return code, manager.log.read_text()


@pytest.mark.e2e
@pytest.mark.asyncio
@pytest.mark.parametrize("election", list(ELECTION), ids=list(ELECTION))
async def test_pycm_run_plugin_init_raises_exit_1_names_controller_and_distribution(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, election: str
) -> None:
    _install_on_path(
        tmp_path,
        monkeypatch,
        "pycm-failing-plugin",
        "pycm_failing_plugin",
        """
        from pycm.controller import ControllerDescriptor

        async def init(ctx):
            raise RuntimeError("missing CRD")

        descriptor = ControllerDescriptor("failing", init)
        """,
    )
    code, log = await _run_until_exit(
        cluster, tmp_path, "--controllers=failing", *ELECTION[election]
    )
    assert code == 1, log
    message = (
        "controller 'failing' (distribution pycm-failing-plugin 1.0) failed to start: "
        "RuntimeError: missing CRD"
    )
    assert message in log
    assert "Traceback" not in log
    assert log.rstrip().endswith(message), log


@pytest.mark.e2e
@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("returned", "source", "what"),
    [
        pytest.param(
            "the builder",
            """
            from pycm.controller import ControllerBuilder, ControllerDescriptor
            from pycm.kube.resources import CONFIGMAPS

            async def init(ctx):
                builder = ControllerBuilder(ctx, "odd").for_(CONFIGMAPS)

                async def reconcile(request):
                    return None

                builder.complete(reconcile)
                return builder  # the runnable complete() returned was meant

            descriptor = ControllerDescriptor("odd", init)
            """,
            "init returned a value of type ControllerBuilder",
            id="builder",
        ),
        pytest.param(
            "a plain function",
            """
            from pycm.controller import ControllerDescriptor

            async def init(ctx):
                def run():  # not async
                    return None

                return run

            descriptor = ControllerDescriptor("odd", init)
            """,
            "run() returned None",
            id="sync-run",
        ),
    ],
)
@pytest.mark.parametrize("election", list(ELECTION), ids=list(ELECTION))
async def test_pycm_run_plugin_init_returns_no_runnable_exit_1_one_line(
    cluster: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    returned: str,
    source: str,
    what: str,
    election: str,
) -> None:
    _install_on_path(tmp_path, monkeypatch, "pycm-odd-runnable", "pycm_odd_runnable", source)
    code, log = await _run_until_exit(cluster, tmp_path, "--controllers=odd", *ELECTION[election])
    assert code == 1, log
    assert "Traceback" not in log, returned
    last = log.rstrip().splitlines()[-1]
    assert "controller 'odd' (distribution pycm-odd-runnable 1.0) failed to start: " in last
    assert what in last


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_pycm_run_sigterm_while_a_plugin_init_waits_for_ever_stops_exit_0(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A mistake a new controller makes: waiting in init for a cache that only starts after
    # every init returned. The manager cannot start, but SIGTERM must still stop it.
    _install_on_path(
        tmp_path,
        monkeypatch,
        "pycm-waiting-plugin",
        "pycm_waiting_plugin",
        """
        from pycm.controller import ControllerBuilder, ControllerDescriptor
        from pycm.kube.resources import CONFIGMAPS

        async def init(ctx):
            builder = ControllerBuilder(ctx, "waiting").for_(CONFIGMAPS)
            await builder.informer(CONFIGMAPS).wait_synced()

            async def reconcile(request):
                return None

            return builder.complete(reconcile)

        descriptor = ControllerDescriptor("waiting", init)
        """,
    )
    manager = start_manager(cluster.kubeconfig_path, tmp_path, "--controllers=waiting")
    try:
        await _until_readyz(manager, lambda r: "[-]informers-synced failed" in r.text)
    finally:
        code = await stop_manager(manager)  # fails the test if it does not stop in time
    assert code == 0, manager.log.read_text()


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_pycm_run_second_signal_during_a_slow_shutdown_exits_1_at_once(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # KCM's signal handling: the first signal stops cleanly, a second one exits directly (1).
    _install_on_path(
        tmp_path,
        monkeypatch,
        "pycm-slow-plugin",
        "pycm_slow_plugin",
        """
        import asyncio
        import sys
        from pycm.controller import ControllerDescriptor

        async def init(ctx):
            async def run():
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    print("slow: stopping", file=sys.stderr, flush=True)
                    await asyncio.sleep(3600)  # a controller that does not stop
                    raise

            return run

        descriptor = ControllerDescriptor("slow", init)
        """,
    )
    manager = start_manager(cluster.kubeconfig_path, tmp_path, "--controllers=slow")
    try:
        await _until_readyz(manager, lambda r: r.status_code == 200)
        manager.proc.send_signal(signal.SIGTERM)

        async def stopping() -> bool:
            return "slow: stopping" in manager.log.read_text()

        await poll(stopping, timeout=30)
        manager.proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(manager.proc.wait, 60)
    finally:
        await stop_manager(manager)
    log = manager.log.read_text()
    assert code == 1, log
    assert "pycm run: second signal, exiting without a clean shutdown" in log


@pytest.mark.e2e
@pytest.mark.asyncio
@pytest.mark.parametrize("election", list(ELECTION), ids=list(ELECTION))
async def test_pycm_run_plugin_run_raises_exit_1_one_line(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, election: str
) -> None:
    _install_on_path(
        tmp_path,
        monkeypatch,
        "pycm-crashing-plugin",
        "pycm_crashing_plugin",
        """
        from pycm.controller import ControllerDescriptor

        async def init(ctx):
            async def run():
                raise RuntimeError("boom in run")

            return run

        descriptor = ControllerDescriptor("crashing", init)
        """,
    )
    code, log = await _run_until_exit(
        cluster, tmp_path, "--controllers=crashing", *ELECTION[election]
    )
    assert code == 1, log
    assert "Traceback" not in log
    assert (
        log.rstrip()
        .splitlines()[-1]
        .endswith(
            "controller 'crashing' (distribution pycm-crashing-plugin 1.0) failed: "
            "RuntimeError: boom in run"
        )
    ), log


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_pycm_run_plugin_background_task_raises_exit_1_one_line(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ctx.add_runnable: "its death stops the manager like a built-in's" (docs/controllers.md).
    _install_on_path(
        tmp_path,
        monkeypatch,
        "pycm-background-plugin",
        "pycm_background_plugin",
        """
        from pycm.controller import ControllerDescriptor

        async def init(ctx):
            async def refresh():
                raise ValueError("bad settings")

            ctx.add_runnable("settings refresher", refresh)
            return None

        descriptor = ControllerDescriptor("background", init)
        """,
    )
    code, log = await _run_until_exit(cluster, tmp_path, "--controllers=background")
    assert code == 1, log
    assert "Traceback" not in log
    last = log.rstrip().splitlines()[-1]
    assert last.endswith("background task 'settings refresher' failed: ValueError: bad settings")


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_pycm_run_plugin_run_that_returns_is_a_warning_and_the_manager_runs_on(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A controller that set itself up and returned (where its run should wait until cancelled)
    # reconciles nothing more, and nothing said so.
    _install_on_path(
        tmp_path,
        monkeypatch,
        "pycm-returning-plugin",
        "pycm_returning_plugin",
        """
        from pycm.controller import ControllerDescriptor

        async def init(ctx):
            async def run():
                return None

            return run

        descriptor = ControllerDescriptor("returning", init)
        """,
    )
    manager = start_manager(cluster.kubeconfig_path, tmp_path, "--controllers=*,returning")
    warning = (
        "controller 'returning' (distribution pycm-returning-plugin 1.0) returned while the "
        "manager runs: it does no more work (a run should wait until it is cancelled)"
    )
    try:

        async def warned() -> bool:
            assert manager.proc.poll() is None, manager.log.read_text()
            return warning in manager.log.read_text()

        await poll(warned, timeout=30)
    finally:
        code = await stop_manager(manager)
    assert code == 0, manager.log.read_text()
    assert manager.log.read_text().count(warning) == 1
