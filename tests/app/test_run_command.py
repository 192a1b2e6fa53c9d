"""``pycm run``: sectioned help, every usage error at once, FlagsParsed, the pluggable runner."""

from __future__ import annotations

import io
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pycm import __version__, cli
from pycm.app import command
from pycm.app.config import CompletedConfig
from pycm.app.options import SECTIONS
from pycm.trace import Bus
from pycm.trace.kinds import FlagsParsed

USAGE_TAIL = "Usage: pycm run [flags]\nRun 'pycm run --help' for usage.\n"


@pytest.fixture(autouse=True)
def no_runner_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner module that does not exist (whatever lands later)."""
    monkeypatch.setattr(command, "_RUNNER_MODULE", "pycm.app._test_absent_run")


class Recorder:
    """A runner that records the config it was given and returns a chosen status."""

    def __init__(self, status: int = 0) -> None:
        self.status = status
        self.configs: list[CompletedConfig] = []
        self.parts: list[dict[str, object]] = []  # what run_manager is handed besides the config

    def __call__(self, config: CompletedConfig, **parts: object) -> int:
        self.configs.append(config)
        self.parts.append(parts)
        return self.status


def _run(argv: list[str], **kwargs: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = command.run(argv, stdout=out, stderr=err, bus=Bus(), **kwargs)  # type: ignore[arg-type]
    return status, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------------------------
# Help
# ---------------------------------------------------------------------------------------------


def _help() -> str:
    status, out, err = _run(["--help"])
    assert (status, err) == (0, "")
    return out


def test_run_help_cobra_layout_usage_then_sections() -> None:
    out = _help()
    assert out.startswith(command.LONG + "\n\nUsage:\n  pycm run [flags]\n\nGeneric flags:\n\n")


def test_run_help_every_section_in_order() -> None:
    lines = _help().splitlines()
    titles = [line.removesuffix(" flags:") for line in lines if line.endswith(" flags:")]
    assert titles == list(SECTIONS)
    assert SECTIONS == (
        "Generic",
        "Controllers",
        "Leader election",
        "Sharding",
        "Deployment controller",
        "ReplicaSet controller",
        "Secure serving",
        "Insecure serving",
        "Authentication",
        "Authorization",
        "Tracing and events",
        "Logs",
        "Misc",
        "Global",
    )


def _flag_block(out: str, left: str) -> str:
    """The help text of one flag: its line and any continuation lines."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(left + " "):
            block = [line]
            for more in lines[i + 1 :]:
                if not more.startswith(" " * 8) or more.lstrip().startswith("-"):
                    break
                block.append(more)
            return "\n".join(block)
    raise AssertionError(f"{left!r} is not in the help")


@pytest.mark.parametrize(
    ("left", "section", "default"),
    [
        pytest.param("      --kubeconfig string", "Misc", None, id="kubeconfig"),
        pytest.param("      --master string", "Misc", None, id="master"),
        pytest.param("      --config string", "Misc", None, id="config"),
        pytest.param("      --controllers strings", "Controllers", "[*]", id="controllers"),
        pytest.param(
            "      --controller-start-interval duration", "Controllers", None, id="start-interval"
        ),
        pytest.param(
            "      --stuck-worker-threshold duration", "Controllers", "1m0s", id="stuck-worker"
        ),
        pytest.param("      --wait-for-resources", "Controllers", None, id="wait-for-resources"),
        pytest.param("      --min-resync-period duration", "Generic", "12h0m0s", id="resync"),
        pytest.param("      --kube-api-qps float32", "Generic", "20", id="qps"),
        pytest.param("      --kube-api-burst int32", "Generic", "30", id="burst"),
        pytest.param(
            "      --emulated-version mapStringString", "Generic", None, id="emulated-version"
        ),
        pytest.param(
            "      --use-service-account-credentials", "Generic", None, id="sa-credentials"
        ),
        pytest.param("      --leader-elect", "Leader election", "true", id="leader-elect"),
        pytest.param(
            "      --leader-elect-lease-duration duration", "Leader election", "15s", id="lease"
        ),
        pytest.param(
            "      --leader-elect-renew-deadline duration", "Leader election", "10s", id="renew"
        ),
        pytest.param(
            "      --leader-elect-retry-period duration", "Leader election", "2s", id="retry"
        ),
        pytest.param(
            "      --leader-elect-warm-standby", "Leader election", None, id="warm-standby"
        ),
        pytest.param(
            "      --leader-elect-resource-lock string", "Leader election", '"leases"', id="lock"
        ),
        pytest.param(
            "      --leader-elect-resource-name string", "Leader election", '"pycm"', id="name"
        ),
        pytest.param(
            "      --leader-elect-resource-namespace string",
            "Leader election",
            None,
            id="namespace",
        ),
        pytest.param("      --identity string", "Leader election", None, id="identity"),
        pytest.param("      --sharded", "Sharding", None, id="sharded"),
        pytest.param("      --sharding-ring string", "Sharding", '"pycm"', id="sharding-ring"),
        pytest.param(
            "      --sharding-lease-duration duration", "Sharding", "15s", id="sharding-lease"
        ),
        pytest.param(
            "      --sharding-renew-deadline duration", "Sharding", "10s", id="sharding-renew"
        ),
        pytest.param(
            "      --sharding-retry-period duration", "Sharding", "2s", id="sharding-retry"
        ),
        pytest.param(
            "      --sharding-lease-namespace string", "Sharding", None, id="sharding-namespace"
        ),
        pytest.param(
            "      --concurrent-deployment-syncs int32",
            "Deployment controller",
            "5",
            id="deployment-syncs",
        ),
        pytest.param(
            "      --concurrent-replicaset-syncs int32",
            "ReplicaSet controller",
            "5",
            id="replicaset-syncs",
        ),
        pytest.param("      --controller-priority-queue", "Controllers", None, id="priority-queue"),
        pytest.param("      --secure-port int", "Secure serving", "10257", id="secure-port"),
        pytest.param("      --bind-address ip", "Secure serving", "0.0.0.0", id="bind-address"),
        pytest.param("      --cert-dir string", "Secure serving", None, id="cert-dir"),
        pytest.param("      --tls-cert-file string", "Secure serving", None, id="tls-cert"),
        pytest.param("      --tls-private-key-file string", "Secure serving", None, id="tls-key"),
        pytest.param("      --max-connections int", "Secure serving", "4096", id="max-conns"),
        pytest.param(
            "      --tls-handshake-timeout duration", "Secure serving", "10s", id="handshake"
        ),
        pytest.param("      --request-head-timeout duration", "Secure serving", "32s", id="header"),
        pytest.param(
            "      --idle-connection-timeout duration", "Secure serving", "1m30s", id="idle"
        ),
        pytest.param("      --port int", "Insecure serving", None, id="port"),
        pytest.param("      --address ip", "Insecure serving", "127.0.0.1", id="address"),
        pytest.param("      --client-ca-file string", "Authentication", None, id="client-ca"),
        pytest.param(
            "      --authentication-kubeconfig string", "Authentication", None, id="authn"
        ),
        pytest.param("      --authorization-kubeconfig string", "Authorization", None, id="authz"),
        pytest.param(
            "      --authorization-always-allow-paths strings",
            "Authorization",
            "[/healthz,/readyz,/livez]",
            id="allow-paths",
        ),
        pytest.param("      --trace-file string", "Tracing and events", None, id="trace-file"),
        pytest.param("      --otlp-endpoint string", "Tracing and events", None, id="otlp"),
        pytest.param(
            "      --otlp-protocol string", "Tracing and events", '"grpc"', id="otlp-protocol"
        ),
        pytest.param(
            "      --trace-sample-ratio float32", "Tracing and events", "0.1", id="sample-ratio"
        ),
        pytest.param(
            "      --trace-slow-threshold duration", "Tracing and events", "1s", id="slow"
        ),
        pytest.param(
            "      --trace-cause-window duration", "Tracing and events", "5s", id="cause-window"
        ),
        pytest.param(
            "      --object-histories", "Tracing and events", "true", id="object-histories"
        ),
        pytest.param("  -v, --v Level", "Logs", None, id="verbosity"),
        pytest.param("      --logging-format string", "Logs", '"text"', id="logging-format"),
        pytest.param("      --vmodule pattern=N,...", "Logs", None, id="vmodule"),
        pytest.param("      --log-flush-frequency duration", "Logs", "5s", id="flush-frequency"),
        pytest.param("  -h, --help", "Global", None, id="help"),
        pytest.param("      --version", "Global", None, id="version"),
    ],
)
def test_run_help_flag_in_section_with_default(
    left: str, section: str, default: str | None
) -> None:
    out = _help()
    start = out.index(f"\n{section} flags:\n")
    end = out.find(" flags:\n", start + len(section) + 9)
    sections_text = out[start : end if end != -1 else len(out)]
    block = _flag_block(sections_text, left)
    if default is None:  # a zero default is not shown (pflag's rule)
        assert "(default" not in block
    else:
        assert block.endswith(f"(default {default})")


def test_run_help_lists_every_flag_once() -> None:
    out = _help()
    names = [
        word
        for line in out.splitlines()
        if line.startswith("  ")
        for word in line.split()[:2]
        if word.startswith("--")
    ]
    assert len(names) == len(set(names)) == 64  # the table above (KCM's refused flags are hidden)


def test_run_help_wins_over_other_problems() -> None:
    status, out, err = _run(["--nope", "--help"])
    assert (status, err) == (0, "")
    assert "Global flags:" in out


def test_cli_help_subcommands_lists_run(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert any(line.split()[:1] == ["run"] for line in out.splitlines())


def test_cli_run_help_through_pycm_parser(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "-h"]) == 0
    out = capsys.readouterr().out
    assert "\nLeader election flags:\n" in out
    assert "usage: pycm" not in out  # argparse's own help is not used


def test_run_version_flag_prints_version() -> None:
    assert _run(["--version"]) == (0, f"pycm {__version__}\n", "")


# ---------------------------------------------------------------------------------------------
# Usage errors: all of them, then the usage line, exit 2
# ---------------------------------------------------------------------------------------------


def test_run_three_bad_flags_three_errors_usage_exit_2() -> None:
    recorder = Recorder()
    status, out, err = _run(
        ["--kube-api-qps=x", "--leader-elect-retry-period=2", "--secure-prot=1"], runner=recorder
    )
    assert (status, out, recorder.configs) == (2, "", [])
    assert err == (
        "Error: unknown flag: --secure-prot (did you mean --secure-port?)\n"
        'Error: invalid argument "x" for "--kube-api-qps" flag: not a number\n'
        'Error: invalid argument "2" for "--leader-elect-retry-period" flag: invalid duration '
        '"2": missing unit (use e.g. "2s"; units: ns, us, ms, s, m, h)\n' + USAGE_TAIL
    )


def test_run_parse_and_validation_errors_reported_together(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("kube-api-qps: [1\n")
    status, _, err = _run(
        [
            f"--config={config}",
            "--leader-elect-renew-deadline=20s",
            "--leader-elect-resource-lock=configmaps",
            "--controllers=*,nope",
            f"--tls-cert-file={tmp_path / 'missing.crt'}",
            "--port=70000",
            "--kube-api-qps=-5",
            "--trace-sample-ratio=2",
        ]
    )
    assert status == 2
    errors = err.splitlines()[:-2]
    assert all(line.startswith("Error: ") for line in errors)
    expected_fragments = [
        "not valid YAML: line 2",
        "leader-elect-lease-duration must be greater than leader-elect-renew-deadline",
        'leader-elect-resource-lock "configmaps" is not supported',
        '"nope" is not in the list of known controllers',
        "--tls-cert-file and --tls-private-key-file must be given together",
        "cannot read: No such file or directory",
        "--port 70000 must be between 0 and 65535",
        "--kube-api-qps -5 must not be negative",
        "--trace-sample-ratio 2 must be between 0 and 1",
    ]
    assert len(errors) == len(expected_fragments)
    for fragment in expected_fragments:
        assert sum(fragment in line for line in errors) == 1, fragment
    assert err.endswith(USAGE_TAIL)


def test_run_known_controllers_parameter_used() -> None:
    from pycm.app.registry import ControllerDescriptor, Registry

    async def init(_: object) -> None:
        return None

    known = Registry()
    known.register(ControllerDescriptor("garbage-collector", init, aliases=("gc",)))
    recorder = Recorder()
    status, _, err = _run(["--controllers=gc"], known_controllers=known, runner=recorder)
    assert (status, err) == (0, "")
    assert recorder.configs[0].controllers.enabled == ("garbage-collector",)
    status, _, err = _run(["--controllers=deployment"], known_controllers=known)
    assert status == 2
    assert '"deployment" is not in the list of known controllers (garbage-collector)' in err


def test_pycm_run_process_bad_flags_no_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pycm", "run", "--bogus", "--v=x", "--config=/nonexistent"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("Error: ") == 3
    assert proc.stderr.endswith(USAGE_TAIL)


# ---------------------------------------------------------------------------------------------
# FlagsParsed and the runner
# ---------------------------------------------------------------------------------------------


def test_run_valid_flags_flags_parsed_event_changed(tmp_path: Path) -> None:
    config = tmp_path / "pycm.yaml"
    config.write_text("kube-api-burst: 50\nleader-elect-resource-name: mine\n")
    bus = Bus(instance="replica-0")
    subscription = bus.subscribe(name="test", kinds=["flags.parsed"])
    recorder = Recorder()
    status = command.run(
        [
            f"--config={config}",
            "--leader-elect-lease-duration=1m30s",
            "--kube-api-burst=60",
            "--leader-elect=false",
            "--kube-api-qps=20",  # the default: not a change
        ],
        bus=bus,
        runner=recorder,
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert status == 0
    events = subscription.drain()
    assert len(events) == 1
    event = events[0]
    assert isinstance(event, FlagsParsed)
    assert event.command == "run"
    assert event.changed == (
        f"config={config},kube-api-burst=60,leader-elect=false,"
        "leader-elect-lease-duration=1m30s,leader-elect-resource-name=mine"
    )
    assert event.changed_count == 5
    assert event.config_file == str(config)
    assert event.instance == "replica-0"
    assert dict(recorder.configs[0].changed) == dict(
        item.split("=", 1) for item in event.changed.split(",")
    )


def test_run_invalid_flags_no_event_no_runner() -> None:
    bus = Bus()
    subscription = bus.subscribe(name="test")
    recorder = Recorder()
    status = command.run(
        ["--port=x"], bus=bus, runner=recorder, stdout=io.StringIO(), stderr=io.StringIO()
    )
    assert (status, subscription.drain(), recorder.configs) == (2, [], [])


def test_run_runner_given_receives_completed_config_status_returned() -> None:
    recorder = Recorder(status=7)
    status, out, err = _run(["--leader-elect-lease-duration=30s", "--port=8080"], runner=recorder)
    assert (status, out, err) == (7, "", "")
    (config,) = recorder.configs
    assert config.leader_election.lease_duration == 30.0
    assert config.insecure_serving.port == 8080
    assert config.leader_election.identity  # completed: KCM's default identity filled in


def test_run_no_runner_not_landed_exit_1() -> None:
    status, out, err = _run([])
    assert (status, out, err) == (1, "", "pycm run: the manager start-up has not landed yet\n")


def _runner_module(monkeypatch: pytest.MonkeyPatch, recorder: Recorder) -> None:
    module = types.ModuleType("pycm_test_runner")
    module.run_manager = recorder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pycm_test_runner", module)
    monkeypatch.setattr(command, "_RUNNER_MODULE", "pycm_test_runner")


# (Was: a runner installed with set_runner is used. The module-global setters are gone: the CLI
# hands the manager its parts, and these two tests hold that wiring.)
def test_run_dashboard_mounter_handed_to_run_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder(status=0)
    _runner_module(monkeypatch, recorder)

    def mounter(**lent: object) -> object:
        return lent

    assert _run(["--secure-port=0"], dashboard_mounter=mounter)[0] == 0
    assert recorder.configs[0].secure_serving.enabled is False
    assert recorder.parts == [{"dashboard_mounter": mounter}]


def test_run_through_the_cli_mounts_the_cli_dashboard(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder(status=0)
    _runner_module(monkeypatch, recorder)
    assert cli.main(["run", "--secure-port=0"]) == 0
    assert recorder.parts == [{"dashboard_mounter": cli._mount_dashboard}]


def test_run_runner_module_run_manager_found_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder(status=3)
    _runner_module(monkeypatch, recorder)
    assert _run([])[0] == 3
    assert len(recorder.configs) == 1
    assert recorder.parts == [{"dashboard_mounter": None}]  # none given: no dashboard


def test_run_runner_module_broken_import_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A runner module that exists but cannot import a dependency is not "not landed yet".
    (tmp_path / "pycm_test_broken_runner.py").write_text("import pycm_test_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(command, "_RUNNER_MODULE", "pycm_test_broken_runner")
    status, _, err = _run([])
    assert status == 1
    assert err == (
        "pycm run: cannot load the manager start-up: "
        "No module named 'pycm_test_no_such_dependency'\n"
    )


# ---------------------------------------------------------------------------------------------
# Hidden debugging flags
# ---------------------------------------------------------------------------------------------


def test_run_debug_clock_flags_are_parsed_but_hidden_from_help_and_suggestions() -> None:
    recorder = Recorder()
    status, _, err = _run(["--debug-clock-rate=0.5", "--debug-clock-offset=-3s"], runner=recorder)
    assert (status, err) == (0, "")
    (config,) = recorder.configs
    assert (config.debugging.clock_rate, config.debugging.clock_offset) == (0.5, -3.0)
    assert "debug-clock" not in _help() and "Debugging flags" not in _help()
    status, _, err = _run(["--debug-clock-rat=2"], runner=Recorder())
    assert status == 2
    assert err.startswith("Error: unknown flag: --debug-clock-rat\n")  # no hint to a hidden one


@pytest.mark.parametrize("rate", ["0", "-1", "1000"])
def test_run_debug_clock_rate_out_of_bounds_is_a_usage_error(rate: str) -> None:
    status, _, err = _run([f"--debug-clock-rate={rate}"], runner=Recorder())
    assert status == 2
    assert f"Error: --debug-clock-rate {rate} must be between 0.01 and 100\n" in err
