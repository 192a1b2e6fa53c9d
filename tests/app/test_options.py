"""pycm run's options: pflag-style parsing, KCM's defaults, each group's validation, the --config
merge, Config/CompletedConfig and the changed-values rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pycm.app.config import CompletedConfig, Config, LeaderElectionConfiguration
from pycm.app.options import (
    SECTIONS,
    WITHHELD,
    ControllerManagerOptions,
    FlagSet,
    is_secret_flag,
)
from pycm.app.options.flagset import (
    BOOL,
    DURATION,
    FLOAT32,
    INT,
    INT32,
    STRING,
    STRINGS,
    FlagValueError,
    NamedFlagSets,
    parse,
)
from pycm.app.options.help import flag_usages
from pycm.app.options.leaderelection import lease_namespace
from pycm.app.registry import ControllerDescriptor, Registry
from pycm.util.durations import DurationError, parse_duration


def _parsed(argv: list[str]) -> tuple[ControllerManagerOptions, list[str]]:
    options = ControllerManagerOptions()
    return options, options.parse(argv)


def _completed(argv: list[str]) -> CompletedConfig:
    options, errors = _parsed(argv)
    errors += options.validate()
    assert errors == []
    return options.config().complete(identity="test-id")


# ---------------------------------------------------------------------------------------------
# Defaults: exactly KCM's (and pycm's own for what KCM does not have)
# ---------------------------------------------------------------------------------------------


def test_config_defaults_no_flags_kcm_values() -> None:
    c = _completed([])
    assert c.generic.min_resync_period == 12 * 3600
    assert c.generic.kube_api_qps == 20
    assert c.generic.kube_api_burst == 30
    assert c.generic.use_service_account_credentials is False
    assert c.controllers.controllers == ("*",)
    assert c.controllers.controller_start_interval == 0
    assert c.controllers.enabled == ("deployment", "replicaset")
    le = c.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        True,
        15,
        10,
        2,
    )
    # The namespace is decided once the client configuration is known (lease_namespace).
    assert (le.resource_lock, le.resource_name, le.resource_namespace) == ("leases", "pycm", "")
    assert c.deployment_controller.concurrent_deployment_syncs == 5
    assert c.replicaset_controller.concurrent_rs_syncs == 5
    assert (c.secure_serving.port, c.secure_serving.bind_address) == (10257, "0.0.0.0")
    assert c.secure_serving.enabled
    assert (c.insecure_serving.port, c.insecure_serving.address) == (0, "127.0.0.1")
    assert not c.insecure_serving.enabled
    assert c.authorization.always_allow_paths == ("/healthz", "/readyz", "/livez")
    assert (c.tracing.sample_ratio, c.tracing.slow_threshold, c.tracing.otlp_protocol) == (
        0.1,
        1.0,
        "grpc",
    )
    assert (c.logs.verbosity, c.logs.format) == (0, "text")
    assert (c.misc.kubeconfig, c.misc.master, c.misc.config_file) == ("", "", "")
    assert dict(c.changed) == {}


def test_complete_no_identity_hostname_underscore_uuid() -> None:
    completed = Config().complete()
    host, _, rest = completed.leader_election.identity.rpartition("_")
    assert host and len(rest) == 36 and rest.count("-") == 4


def test_complete_identity_given_kept() -> None:
    config = Config(leader_election=LeaderElectionConfiguration(identity="me"))
    assert config.complete(identity="other").leader_election.identity == "me"


def test_completed_config_frozen_assignment_refused() -> None:
    completed = Config().complete(identity="x")
    with pytest.raises(AttributeError):
        completed.generic = completed.generic  # type: ignore[misc]
    with pytest.raises(TypeError):
        completed.changed["x"] = "y"  # type: ignore[index]


# ---------------------------------------------------------------------------------------------
# Flag forms (pflag's rules)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param([], True, id="default"),
        pytest.param(["--leader-elect"], True, id="bare"),
        pytest.param(["--leader-elect=false"], False, id="eq-false"),
        pytest.param(["--leader-elect=true"], True, id="eq-true"),
        pytest.param(["--leader-elect=0"], False, id="eq-0"),
        pytest.param(["--leader-elect=F"], False, id="eq-F"),
        pytest.param(["--leader-elect=false", "--leader-elect"], True, id="last-wins"),
    ],
)
def test_parse_bool_flag_forms_value(argv: list[str], expected: bool) -> None:
    options, errors = _parsed(argv)
    assert errors == []
    assert options.leader_election.leader_elect is expected


def test_parse_bool_flag_space_value_stray_argument() -> None:
    options, errors = _parsed(["--leader-elect", "false"])
    assert options.leader_election.leader_elect is True
    assert errors == ['"pycm run" does not take any arguments, got ["false"]']


def test_parse_bool_flag_bad_value_pflag_message() -> None:
    _, errors = _parsed(["--leader-elect=maybe"])
    assert len(errors) == 1
    assert errors[0].startswith('invalid argument "maybe" for "--leader-elect" flag: ')


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("1m30s", 90.0, id="minutes-seconds"),
        pytest.param("500ms", 0.5, id="millis"),
        pytest.param("1.5h", 5400.0, id="fraction"),
        pytest.param("0", 0.0, id="bare-zero"),
    ],
)
def test_parse_duration_flag_go_syntax_seconds(text: str, seconds: float) -> None:
    options, errors = _parsed([f"--controller-start-interval={text}"])
    assert errors == []
    assert options.controllers.controller_start_interval == seconds


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["-v", "3"], 3, id="short-space"),
        pytest.param(["-v=4"], 4, id="short-eq"),
        pytest.param(["-v5"], 5, id="short-attached"),
        pytest.param(["--v=6"], 6, id="long-eq"),
        pytest.param(["--v", "7"], 7, id="long-space"),
    ],
)
def test_parse_verbosity_forms_level(argv: list[str], expected: int) -> None:
    options, errors = _parsed(argv)
    assert errors == []
    assert options.logs.verbosity == expected


def test_parse_value_flag_space_form_takes_next_even_if_dash() -> None:
    options, errors = _parsed(["--kubeconfig", "-weird-name"])
    assert errors == []
    assert options.misc.kubeconfig == "-weird-name"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["--controllers=a,b"], ["a", "b"], id="csv"),
        pytest.param(["--controllers=a", "--controllers=-b"], ["a", "-b"], id="repeat-appends"),
        pytest.param(["--controllers", "*, -replicaset"], ["*", "-replicaset"], id="spaces"),
        pytest.param(["--controllers="], [], id="empty"),
    ],
)
def test_parse_strings_flag_forms_list(argv: list[str], expected: list[str]) -> None:
    options = ControllerManagerOptions(_names("a", "b", "replicaset"))
    assert options.parse(argv) == []
    assert options.controllers.controllers == expected


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        pytest.param(["--kubeconfig"], "flag needs an argument: --kubeconfig", id="needs-arg"),
        pytest.param(["-v"], "flag needs an argument: 'v' in -v", id="short-needs-arg"),
        pytest.param(["-x"], "unknown shorthand flag: 'x' in -x", id="unknown-short"),
        pytest.param(["---x"], "bad flag syntax: ---x", id="triple-dash"),
        pytest.param(["--=x"], "bad flag syntax: --=x", id="empty-name"),
        pytest.param(["--kube"], "unknown flag: --kube", id="no-abbreviation"),
        pytest.param(
            ["--", "--port=1"],
            '"pycm run" does not take any arguments, got ["--port=1"]',
            id="double-dash-ends-flags",
        ),
    ],
)
def test_parse_malformed_command_line_pflag_error(argv: list[str], error: str) -> None:
    _, errors = _parsed(argv)
    assert errors == [error]


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [
        pytest.param("--kubconfig", "--kubeconfig", id="kubeconfig"),
        pytest.param("--leader-elect-lease-duraton", "--leader-elect-lease-duration", id="lease"),
        pytest.param("--secure-prot", "--secure-port", id="secure-port"),
        pytest.param("--concurent-deployment-syncs", "--concurrent-deployment-syncs", id="syncs"),
    ],
)
def test_parse_unknown_flag_did_you_mean(typo: str, suggestion: str) -> None:
    _, errors = _parsed([f"{typo}=1"])
    assert errors == [f"unknown flag: {typo} (did you mean {suggestion}?)"]


def test_parse_unknown_flag_far_from_any_no_suggestion() -> None:
    _, errors = _parsed(["--zzzzqqq"])
    assert errors == ["unknown flag: --zzzzqqq"]


def test_parse_unknown_flag_space_value_not_reported_as_argument() -> None:
    _, errors = _parsed(["--kubconfig", "/tmp/x"])
    assert errors == ["unknown flag: --kubconfig (did you mean --kubeconfig?)"]


@pytest.mark.parametrize(
    ("flag", "text", "reason"),
    [
        pytest.param("kube-api-burst", "3.5", "not an integer", id="int-fraction"),
        pytest.param("kube-api-burst", " 3", "not an integer", id="int-space"),
        pytest.param("kube-api-burst", "99999999999", "out of range", id="int32-range"),
        pytest.param("kube-api-qps", "abc", "not a number", id="float"),
        pytest.param("kube-api-qps", "nan", "not a number", id="float-nan"),
        pytest.param("kube-api-qps", "1e999", "out of range", id="float-inf"),
        pytest.param("bind-address", "1.2.3", 'failed to parse IP: "1.2.3"', id="ip"),
        pytest.param("leader-elect-lease-duration", "15", "missing unit", id="duration-no-unit"),
        pytest.param(
            "leader-elect-lease-duration", "-1s", "negative durations", id="duration-negative"
        ),
    ],
)
def test_parse_bad_value_invalid_argument_with_reason(flag: str, text: str, reason: str) -> None:
    _, errors = _parsed([f"--{flag}={text}"])
    assert len(errors) == 1
    assert errors[0].startswith(f'invalid argument "{text}" for "--{flag}" flag: ')
    assert reason in errors[0]


def test_parse_bad_duration_carries_duration_error_message() -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration("5x")
    _, errors = _parsed(["--leader-elect-retry-period=5x"])
    assert errors == [
        f'invalid argument "5x" for "--leader-elect-retry-period" flag: {caught.value}'
    ]


def test_parse_bad_value_keeps_previous_value() -> None:
    options, _ = _parsed(["--kube-api-burst=7", "--kube-api-burst=x"])
    assert options.generic.kube_api_burst == 7


def test_parse_every_error_collected_not_first() -> None:
    _, errors = _parsed(["--nope", "--kube-api-qps=x", "--secure-port=y", "-v", "z", "stray"])
    assert errors == [
        "unknown flag: --nope",
        'invalid argument "x" for "--kube-api-qps" flag: not a number',
        'invalid argument "y" for "--secure-port" flag: not an integer',
        'invalid argument "z" for "-v, --v" flag: not an integer',
        '"pycm run" does not take any arguments, got ["stray"]',
    ]


# ---------------------------------------------------------------------------------------------
# Validation of each group: every error, all at once
# ---------------------------------------------------------------------------------------------


def _validate(argv: list[str], known: Registry | None = None) -> list[str]:
    options = ControllerManagerOptions(known)
    assert options.parse(argv) == []
    return options.validate()


@pytest.mark.parametrize(
    ("argv", "errors"),
    [
        pytest.param(
            ["--leader-elect-lease-duration=10s"],
            [
                "leader-elect-lease-duration must be greater than leader-elect-renew-deadline "
                "(got 10s and 10s)"
            ],
            id="lease-equal-renew",
        ),
        pytest.param(
            ["--leader-elect-renew-deadline=2400ms"],
            [
                "leader-elect-renew-deadline must be greater than 1.2 × "
                "leader-elect-retry-period (got 2.4s, want more than 2.4s)"
            ],
            id="renew-at-jitter-floor",
        ),
        pytest.param(
            ["--leader-elect-retry-period=0s"],
            ["leader-elect-retry-period must be greater than zero, got 0s"],
            id="retry-zero",
        ),
        pytest.param(
            ["--leader-elect-lease-duration=0s", "--leader-elect-renew-deadline=0s"],
            [
                "leader-elect-lease-duration must be greater than zero, got 0s",
                "leader-elect-renew-deadline must be greater than zero, got 0s",
                "leader-elect-lease-duration must be greater than leader-elect-renew-deadline "
                "(got 0s and 0s)",
                "leader-elect-renew-deadline must be greater than 1.2 × "
                "leader-elect-retry-period (got 0s, want more than 2.4s)",
            ],
            id="zeros-every-error",
        ),
        pytest.param(
            ["--leader-elect-resource-lock=endpoints"],
            ['leader-elect-resource-lock "endpoints" is not supported: only "leases" is'],
            id="lock-type",
        ),
        pytest.param(
            ["--leader-elect-resource-name=", "--leader-elect-resource-namespace="],
            ["leader-elect-resource-name must not be empty"],
            id="empty-lock-names",
        ),
        pytest.param(
            ["--leader-elect=false", "--leader-elect-lease-duration=1s"],
            [],
            id="election-off-not-checked",
        ),
        pytest.param(
            ["--secure-port=65536"],
            ["--secure-port 65536 must be between 0 and 65535, inclusive (0 disables)"],
            id="secure-port-range",
        ),
        pytest.param(
            ["--port=-1"],
            ["--port -1 must be between 0 and 65535, inclusive (0 disables)"],
            id="insecure-port-range",
        ),
        pytest.param(["--secure-port=0"], [], id="secure-port-zero-disables"),
        pytest.param(
            ["--max-connections=-1"],
            ["--max-connections must not be negative, got -1"],
            id="max-connections-negative",
        ),
        pytest.param(
            ["--max-connections=0", "--request-head-timeout=0", "--tls-handshake-timeout=0"],
            [],
            id="serving-limits-zero-turns-off",
        ),
        pytest.param(
            ["--kube-api-qps=-1"], ["--kube-api-qps -1 must not be negative"], id="qps-negative"
        ),
        pytest.param(
            ["--kube-api-burst=-1"],
            ["--kube-api-burst -1 must not be negative"],
            id="burst-negative",
        ),
        pytest.param(["--kube-api-qps=0"], [], id="qps-zero-allowed"),
        pytest.param(
            ["--kube-api-burst=0"],
            ["--kube-api-burst must be greater than 0 when --kube-api-qps is greater than 0"],
            id="burst-zero-with-qps",
        ),
        # qps 0 means client-go's defaults (5 qps, burst 10): burst 0 goes with it.
        pytest.param(["--kube-api-qps=0", "--kube-api-burst=0"], [], id="burst-zero-qps-zero"),
        pytest.param(
            ["--trace-sample-ratio=1.5"],
            ["--trace-sample-ratio 1.5 must be between 0 and 1"],
            id="ratio-above-one",
        ),
        pytest.param(
            ["--trace-sample-ratio=-0.1"],
            ["--trace-sample-ratio -0.1 must be between 0 and 1"],
            id="ratio-negative",
        ),
        pytest.param(["--trace-sample-ratio=1"], [], id="ratio-one-allowed"),
        pytest.param(
            ["--otlp-protocol=http"],
            ['--otlp-protocol "http" is not supported: want one of "grpc", "http/protobuf"'],
            id="otlp-protocol",
        ),
        pytest.param(["--otlp-protocol=http/protobuf"], [], id="otlp-http-protobuf"),
        pytest.param(
            ["--logging-format=xml"],
            ['--logging-format "xml" is not supported: want one of "text", "json"'],
            id="logging-format",
        ),
        pytest.param(
            ["--log-format=xml"],
            ['--log-format "xml" is not supported: want one of "text", "json"'],
            id="log-format-deprecated-alias",
        ),
        pytest.param(["-v=-1"], ["-v -1 must not be negative"], id="verbosity-negative"),
        pytest.param(
            ["--concurrent-deployment-syncs=0", "--concurrent-replicaset-syncs=0"],
            [
                "--concurrent-deployment-syncs must be at least 1, got 0",
                "--concurrent-replicaset-syncs must be at least 1, got 0",
            ],
            id="zero-workers",
        ),
        pytest.param(
            ["--authorization-always-allow-paths=/healthz,metrics"],
            ['--authorization-always-allow-paths: "metrics" must begin with /'],
            id="allow-path-relative",
        ),
        pytest.param(
            ["--controllers=*,foo,-bar"],
            [
                '"foo" is not in the list of known controllers (deployment, replicaset)',
                '"bar" is not in the list of known controllers (deployment, replicaset)',
            ],
            id="unknown-controllers",
        ),
    ],
)
def test_validate_bad_values_every_error(argv: list[str], errors: list[str]) -> None:
    assert _validate(argv) == errors


def _names(*names: str, off: tuple[str, ...] = ()) -> Registry:
    async def init(_: Any) -> None:
        return None

    registry = Registry()
    for name in names:
        registry.register(ControllerDescriptor(name, init, enabled_by_default=name not in off))
    return registry


@pytest.mark.parametrize(
    ("items", "enabled"),
    [
        pytest.param("*", ("deployment", "replicaset"), id="star"),
        pytest.param("*,-replicaset", ("deployment",), id="star-minus"),
        pytest.param("-deployment-controller,*", ("replicaset",), id="minus-alias"),
        pytest.param("replicaset-controller", ("replicaset",), id="alias-only"),
        pytest.param("deployment", ("deployment",), id="name-only"),
        pytest.param("", (), id="none"),
    ],
)
def test_config_controllers_default_known_enabled(items: str, enabled: tuple[str, ...]) -> None:
    assert _completed([f"--controllers={items}"]).controllers.enabled == enabled


def test_validate_controllers_registry_given_uses_it() -> None:
    known = _names("alpha", "beta", off=("beta",))
    options = ControllerManagerOptions(known)
    assert options.parse(["--controllers=*,deployment"]) == []
    assert options.validate() == [
        '"deployment" is not in the list of known controllers (alpha, beta)'
    ]
    options.controllers.controllers = ["*"]
    assert options.config().controllers.enabled == ("alpha",)


def test_validate_tls_pair_incomplete_and_unreadable(tmp_path: Path) -> None:
    cert = tmp_path / "tls.crt"
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    assert _validate([f"--tls-cert-file={cert}"]) == [
        "--tls-cert-file and --tls-private-key-file must be given together"
    ]
    missing = tmp_path / "nope.key"
    assert _validate([f"--tls-cert-file={cert}", f"--tls-private-key-file={missing}"]) == [
        f'--tls-private-key-file "{missing}": cannot read: No such file or directory'
    ]
    assert _validate([f"--tls-cert-file={cert}", f"--tls-private-key-file={cert}"]) == []


@pytest.mark.parametrize(
    "flag",
    [
        pytest.param("client-ca-file", id="client-ca"),
        pytest.param("kubeconfig", id="kubeconfig"),
        pytest.param("authentication-kubeconfig", id="authn-kubeconfig"),
        pytest.param("authorization-kubeconfig", id="authz-kubeconfig"),
        pytest.param("tls-cert-file", id="tls-cert"),
    ],
)
def test_validate_file_flag_directory_cannot_read(flag: str, tmp_path: Path) -> None:
    errors = _validate([f"--{flag}={tmp_path}"])
    assert f'--{flag} "{tmp_path}": cannot read: Is a directory' in errors


# ---------------------------------------------------------------------------------------------
# --config: the file sets, flags override, problems reported with everything else
# ---------------------------------------------------------------------------------------------


def _config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pycm.yaml"
    path.write_text(text)
    return path


def test_config_file_sets_values_typed(tmp_path: Path) -> None:
    path = _config_file(
        tmp_path,
        "leader-elect-lease-duration: 4s\n"
        "leader-elect-renew-deadline: 3s\n"
        "leader-elect-retry-period: 1s\n"
        "leader-elect: yes\n"
        "kube-api-qps: 50\n"
        "trace-sample-ratio: 0.5\n"
        "controllers: ['*', -replicaset]\n"
        "v: 2\n",
    )
    c = _completed([f"--config={path}"])
    le = c.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        True,
        4,
        3,
        1,
    )
    assert c.generic.kube_api_qps == 50
    assert c.tracing.sample_ratio == 0.5
    assert c.controllers.controllers == ("*", "-replicaset")
    assert c.controllers.enabled == ("deployment",)
    assert c.logs.verbosity == 2
    assert c.misc.config_file == str(path)


def test_config_file_flag_overrides_whatever_the_order(tmp_path: Path) -> None:
    path = _config_file(tmp_path, "kube-api-burst: 40\ncontrollers: [deployment]\n")
    c = _completed(["--kube-api-burst=60", "--controllers=replicaset", f"--config={path}"])
    assert c.generic.kube_api_burst == 60
    assert c.controllers.controllers == ("replicaset",)


def test_config_file_empty_sets_nothing(tmp_path: Path) -> None:
    path = _config_file(tmp_path, "")
    assert _completed([f"--config={path}"]).generic.kube_api_burst == 30


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param(
            "leader-elect-lease-duraton: 4s\n",
            'unknown key "leader-elect-lease-duraton" '
            '(did you mean "leader-elect-lease-duration"?)',
            id="unknown-key",
        ),
        pytest.param(
            "--kubeconfig: x\n",
            'unknown key "--kubeconfig" (did you mean "kubeconfig"?)',
            id="dashed-key",
        ),
        pytest.param("config: other.yaml\n", '"config" cannot be set in the file', id="config"),
        pytest.param(
            "leader-elect:\n  lease-duration: 4s\n",
            "leader-elect: want a single value, got dict",
            id="nested",
        ),
        pytest.param("master:\n", "master: want a single value, got nothing", id="null"),
        pytest.param("- a\n- b\n", "want a mapping of flag names", id="top-level-list"),
        pytest.param(
            "kube-api-qps: 1\n  bad: indent\n",
            "not valid YAML: line 2, column 6: mapping values are not allowed here",
            id="malformed",
        ),
        pytest.param(
            "kube-api-qps: lots\n",
            'invalid argument "lots" for "--kube-api-qps" flag: not a number',
            id="bad-value",
        ),
        pytest.param(
            "leader-elect-lease-duration: 15\n",
            'invalid argument "15" for "--leader-elect-lease-duration" flag: invalid duration',
            id="duration-without-unit",
        ),
    ],
)
def test_config_file_problem_reported_with_path(tmp_path: Path, text: str, error: str) -> None:
    path = _config_file(tmp_path, text)
    _, errors = _parsed([f"--config={path}"])
    assert len(errors) == 1
    assert errors[0].startswith(f'--config "{path}": ')
    assert error in errors[0]


def test_config_file_missing_cannot_read(tmp_path: Path) -> None:
    _, errors = _parsed([f"--config={tmp_path / 'absent.yaml'}"])
    assert errors == [
        f'--config "{tmp_path / "absent.yaml"}": cannot read: No such file or directory'
    ]


def test_config_file_errors_and_flag_errors_all_reported(tmp_path: Path) -> None:
    path = _config_file(tmp_path, "nope: 1\nkube-api-burst: x\n")
    _, errors = _parsed([f"--config={path}", "--secure-port=z"])
    assert len(errors) == 3
    assert errors[0].endswith('unknown key "nope"')
    assert "kube-api-burst" in errors[1]
    assert "--secure-port" in errors[2]


# ---------------------------------------------------------------------------------------------
# changed: non-default values only, secrets withheld
# ---------------------------------------------------------------------------------------------


def test_config_changed_non_default_values_go_formatted() -> None:
    options, errors = _parsed(
        [
            "--leader-elect-lease-duration=1m30s",
            "--kube-api-burst=30",  # given, but the default: not a change
            "--leader-elect=false",
            "--controllers=*,-replicaset",
            "--kube-api-qps=2.5",
        ]
    )
    assert errors == []
    assert options.config().changed == {
        "leader-elect-lease-duration": "1m30s",
        "leader-elect": "false",
        "controllers": "[*,-replicaset]",
        "kube-api-qps": "2.5",
    }


def test_config_changed_secret_flag_value_withheld() -> None:
    class Holder:
        token = ""

    options = ControllerManagerOptions()
    holder = Holder()
    options.flag_sets.flag_set("Misc").add(holder, "token", "bootstrap-token", STRING, "a token")
    assert options.parse(["--bootstrap-token=s3cr3t"]) == []
    assert options.config().changed == {"bootstrap-token": WITHHELD}


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        pytest.param("token", True, id="token"),
        pytest.param("bootstrap-token", True, id="segment"),
        pytest.param("tokens", True, id="plural"),
        pytest.param("db-password", True, id="password"),
        pytest.param("client-secret", True, id="secret"),
        pytest.param("token-auth-file", False, id="path-file"),
        pytest.param("secret-dir", False, id="path-dir"),
        pytest.param("authentication-kubeconfig", False, id="kubeconfig"),
        pytest.param("tokenizer", False, id="not-a-segment"),
        pytest.param("kube-api-qps", False, id="plain"),
    ],
)
def test_is_secret_flag_name_rule(name: str, secret: bool) -> None:
    assert is_secret_flag(name) is secret


def test_flag_sets_default_flags_none_secret() -> None:
    assert [f.name for f in ControllerManagerOptions().flag_sets if f.secret] == []


# ---------------------------------------------------------------------------------------------
# Flag machinery and help rendering
# ---------------------------------------------------------------------------------------------


def test_flag_sets_sections_in_order() -> None:
    titles = [fs.title for fs in ControllerManagerOptions().flag_sets.sets]
    # The help's sections, then the one of hidden flags only (never shown).
    assert titles == [*SECTIONS, "Debugging", "Refused"]  # (both hidden from help)


def test_named_flag_sets_duplicate_name_rejected() -> None:
    class Holder:
        a = 0
        b = 0

    sets = NamedFlagSets()
    holder = Holder()
    sets.flag_set("One").add(holder, "a", "same", INT, "")
    sets.flag_set("Two").add(holder, "b", "same", INT, "")
    with pytest.raises(ValueError, match="--same is defined twice"):
        parse(sets, [])


def test_flag_set_invalid_value_state_unchanged() -> None:
    class Holder:
        n = 3

    holder = Holder()
    flag = FlagSet("S").add(holder, "n", "n", INT32, "")
    with pytest.raises(FlagValueError, match='invalid argument "x" for "--n" flag'):
        flag.set("x")
    assert holder.n == 3


def test_flag_usages_pflag_layout_defaults_only_when_not_zero() -> None:
    class Holder:
        on = True
        off = False
        name = "leases"
        empty = ""
        period = 15.0
        zero = 0.0
        items = ["*"]
        ratio = 0.1

    holder = Holder()
    fs = FlagSet("Example")
    fs.add(holder, "on", "on", BOOL, "On.")
    fs.add(holder, "off", "off", BOOL, "Off.")
    fs.add(holder, "name", "name", STRING, "Name.")
    fs.add(holder, "empty", "empty", STRING, "Empty.")
    fs.add(holder, "period", "period", DURATION, "Period.")
    fs.add(holder, "zero", "zero", DURATION, "Zero.")
    fs.add(holder, "items", "items", STRINGS, "Items.")
    fs.add(holder, "ratio", "ratio", FLOAT32, "Ratio.\nSecond line.", shorthand="r")
    assert flag_usages(fs) == (
        "      --empty string      Empty.\n"
        "      --items strings     Items. (default [*])\n"
        '      --name string       Name. (default "leases")\n'
        "      --off               Off.\n"
        "      --on                On. (default true)\n"
        "      --period duration   Period. (default 15s)\n"
        "  -r, --ratio float32     Ratio.\n"
        "                          Second line. (default 0.1)\n"
        "      --zero duration     Zero.\n"
    )


def test_flag_usages_columns_wraps_under_usage_column() -> None:
    class Holder:
        name = ""

    fs = FlagSet("S")
    fs.add(Holder(), "name", "name", STRING, "word " * 20)
    lines = flag_usages(fs, cols=60).splitlines()
    assert len(lines) > 1
    assert all(len(line) <= 60 for line in lines)
    assert all(line.startswith(" " * 22 + "word") for line in lines[1:])


@pytest.mark.parametrize(
    ("given", "pod_namespace", "want"),
    [
        pytest.param("", "", "kube-system", id="out-of-cluster-kcm-default"),
        pytest.param("", "pycm-system", "pycm-system", id="in-cluster-pod-namespace"),
        pytest.param("kube-system", "pycm-system", "kube-system", id="flag-wins-in-cluster"),
        pytest.param("leases", "", "leases", id="flag-wins-out-of-cluster"),
    ],
)
def test_lease_namespace_flag_then_pod_namespace_then_kube_system(
    given: str, pod_namespace: str, want: str
) -> None:
    assert lease_namespace(given, pod_namespace) == want


def test_stuck_worker_threshold_defaults_to_60s_and_parses_go_durations() -> None:
    assert _completed([]).controllers.stuck_worker_threshold == 60.0
    assert _completed(["--stuck-worker-threshold=1m30s"]).controllers.stuck_worker_threshold == 90
    assert _completed(["--stuck-worker-threshold=0"]).controllers.stuck_worker_threshold == 0


def test_wait_for_resources_defaults_off_and_parses_as_a_bool() -> None:
    assert _completed([]).controllers.wait_for_resources is False
    assert _completed(["--wait-for-resources"]).controllers.wait_for_resources is True
    assert _completed(["--wait-for-resources=false"]).controllers.wait_for_resources is False


def test_stuck_worker_threshold_negative_is_an_error() -> None:
    options, errors = _parsed(["--stuck-worker-threshold=-5s"])
    assert errors == [
        'invalid argument "-5s" for "--stuck-worker-threshold" flag: invalid duration "-5s": '
        'negative durations are not allowed (use e.g. "5s")'
    ]
    options.controllers.stuck_worker_threshold = -5.0  # set in code, not parsed
    assert options.validate() == ["--stuck-worker-threshold -5s must not be negative"]


def test_trace_cause_window_defaults_to_5s_and_parses_go_durations() -> None:
    assert _completed([]).tracing.cause_window == 5.0
    assert _completed(["--trace-cause-window=1m"]).tracing.cause_window == 60
    assert _completed(["--trace-cause-window=0"]).tracing.cause_window == 0


def test_trace_cause_window_negative_is_an_error() -> None:
    options, errors = _parsed(["--trace-cause-window=-5s"])
    assert errors == [
        'invalid argument "-5s" for "--trace-cause-window" flag: invalid duration "-5s": '
        'negative durations are not allowed (use e.g. "5s")'
    ]
    options.tracing.cause_window = -5.0  # set in code, not parsed
    assert options.validate() == ["--trace-cause-window -5s must not be negative"]
