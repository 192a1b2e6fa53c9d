"""KCM 1.36's flag names in the sections pycm has: each exists with KCM's name, type and default,
or is refused with one line (never ignored); --log-format is a deprecated alias of
--logging-format; --vmodule, --tls-min-version, --tls-cipher-suites and the review cache TTLs
work as KCM's."""

from __future__ import annotations

import io
import logging
import ssl
from pathlib import Path

import pytest

from pycm.app import command
from pycm.app.logs import configure_logging
from pycm.app.options import ControllerManagerOptions
from pycm.app.options.refused import REFUSED
from pycm.server.certs import load_or_generate, server_ssl_context
from pycm.server.tlsnames import cipher_suites, tls_version
from pycm.trace.bus import Bus

# KCM 1.36's flags in the sections pycm has (and Metrics, Debugging, Leader migration: flags a
# KCM manifest sets), as its --help lists them; facts from kube-controller-manager --help.
KCM_FLAGS = {
    "Generic": [
        "allocate-node-cidrs",
        "cidr-allocator-type",
        "cloud-config",
        "cloud-provider",
        "cluster-cidr",
        "cluster-name",
        "configure-cloud-routes",
        "controller-start-interval",
        "controllers",
        "external-cloud-volume-plugin",
        "feature-gates",
        "kube-api-burst",
        "kube-api-content-type",
        "kube-api-qps",
        "leader-elect",
        "leader-elect-lease-duration",
        "leader-elect-renew-deadline",
        "leader-elect-resource-lock",
        "leader-elect-resource-name",
        "leader-elect-resource-namespace",
        "leader-elect-retry-period",
        "min-resync-period",
        "node-monitor-period",
        "route-reconciliation-period",
        "use-service-account-credentials",
    ],
    "Leader-migration": ["enable-leader-migration", "leader-migration-config"],
    "Debugging": ["contention-profiling", "profiling"],
    "Deployment controller": ["concurrent-deployment-syncs"],
    "ReplicaSet controller": ["concurrent-replicaset-syncs"],
    "Secure serving": [
        "bind-address",
        "cert-dir",
        "disable-http2-serving",
        "http2-max-streams-per-connection",
        "permit-address-sharing",
        "permit-port-sharing",
        "secure-port",
        "tls-cert-file",
        "tls-cipher-suites",
        "tls-min-version",
        "tls-private-key-file",
        "tls-sni-cert-key",
    ],
    "Authentication": [
        "authentication-kubeconfig",
        "authentication-skip-lookup",
        "authentication-token-webhook-cache-ttl",
        "authentication-tolerate-lookup-failure",
        "client-ca-file",
        "requestheader-allowed-names",
        "requestheader-client-ca-file",
        "requestheader-extra-headers-prefix",
        "requestheader-group-headers",
        "requestheader-uid-headers",
        "requestheader-username-headers",
    ],
    "Authorization": [
        "authorization-always-allow-paths",
        "authorization-kubeconfig",
        "authorization-webhook-cache-authorized-ttl",
        "authorization-webhook-cache-unauthorized-ttl",
    ],
    "Metrics": [
        "allow-metric-labels",
        "allow-metric-labels-manifest",
        "disable-metrics",
        "show-hidden-metrics-for-version",
    ],
    "Logs": [
        "log-flush-frequency",
        "log-json-info-buffer-size",
        "log-json-split-stream",
        "log-text-info-buffer-size",
        "log-text-split-stream",
        "logging-format",
        "v",
        "vmodule",
    ],
    "Misc": ["kubeconfig", "master"],
}

# Where pycm has the flag, its default as KCM prints it.
KCM_DEFAULTS = {
    "authentication-token-webhook-cache-ttl": "10s",
    "authorization-webhook-cache-authorized-ttl": "10s",
    "authorization-webhook-cache-unauthorized-ttl": "10s",
    "tls-min-version": "",
    "tls-cipher-suites": "[]",
    "logging-format": "text",
    "log-flush-frequency": "5s",
    "vmodule": "",
    "v": "0",
    "feature-gates": "",
}


def _flags() -> dict[str, object]:
    by_name, _ = ControllerManagerOptions().flag_sets.index()
    return dict(by_name)


def test_every_kcm_flag_exists_or_is_refused() -> None:
    flags = _flags()
    missing = [
        name
        for names in KCM_FLAGS.values()
        for name in names
        if name not in flags  # (refused flags are defined too, hidden)
    ]
    assert missing == []
    for names in KCM_FLAGS.values():
        for name in names:
            flag = flags[name]
            refused = name in REFUSED
            assert getattr(flag, "hidden") is refused, name  # noqa: B009
    for name, default in KCM_DEFAULTS.items():
        assert getattr(flags[name], "default") == default, name  # noqa: B009


def _errors(argv: list[str]) -> list[str]:
    options = ControllerManagerOptions()
    return options.parse(argv) + options.validate()


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_flag_given_is_one_line_saying_why(name: str) -> None:
    refusal = REFUSED[name]
    value = "true" if refusal.bool_flag and refusal.accepts != "true" else "false"
    argv = [f"--{name}={value}" if refusal.bool_flag else f"--{name}=x"]
    assert _errors(argv) == [f"pycm does not support --{name}: {refusal.why}"]


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--profiling=false"], id="profiling-off"),
        pytest.param(["--disable-http2-serving"], id="http2-off"),
        pytest.param(["--authentication-skip-lookup"], id="skip-lookup"),
        pytest.param(["--kube-api-content-type=application/json"], id="json"),
        pytest.param(["--profiling", "--profiling=false"], id="last-wins"),
    ],
)
def test_refused_flag_set_to_what_pycm_does_is_accepted(argv: list[str]) -> None:
    assert _errors(argv) == []


def test_bool_refused_flag_takes_no_value_argument() -> None:
    # `--profiling` alone is one flag; the next word is a stray argument, as pflag reads it.
    assert (
        _errors(["--profiling", "stray"])[0]
        == '"pycm run" does not take any arguments, got ["stray"]'
    )


def test_refused_flags_reach_neither_configz_nor_flagz() -> None:
    options = ControllerManagerOptions()
    assert options.parse(["--profiling=false"]) == []
    config = options.config()
    assert "profiling" not in config.changed
    assert not set(REFUSED) & set(config.flags)
    assert config.flags["kube-api-qps"] == "20"


def test_log_format_is_a_deprecated_alias_of_logging_format() -> None:
    out, err = io.StringIO(), io.StringIO()
    seen: list[object] = []

    def runner(config: object) -> int:
        seen.append(config)
        return 0

    status = command.run(["--log-format=json"], stdout=out, stderr=err, bus=Bus(), runner=runner)
    assert err.getvalue().splitlines() == [
        "Flag --log-format has been deprecated, use --logging-format instead"
    ]
    assert status == 0 and len(seen) == 1
    options = ControllerManagerOptions()
    assert options.parse(["--log-format=json"]) == []
    assert options.warnings == [
        "Flag --log-format has been deprecated, use --logging-format instead"
    ]
    assert options.config().logs.format == "json"
    newer = ControllerManagerOptions()
    newer.parse(["--log-format=text", "--logging-format=json"])
    assert newer.config().logs.format == "json"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        pytest.param("reflector", "syntax error: expect comma-separated list of filename=N"),
        pytest.param("=3", "syntax error: expect comma-separated list of filename=N"),
        pytest.param("reflector=x", "syntax error: expect comma-separated list of filename=N"),
        pytest.param("reflector=-1", "negative value for vmodule level"),
    ],
)
def test_vmodule_refuses_what_klog_refuses(value: str, error: str) -> None:
    assert _errors([f"--vmodule={value}"]) == [
        f'invalid argument "{value}" for "--vmodule" flag: {error}'
    ]


def test_vmodule_only_for_text_format() -> None:
    assert _errors(["--vmodule=reflector=4", "--logging-format=json"]) == [
        "--vmodule is only supported for the text log format"
    ]


def test_vmodule_raises_one_modules_verbosity() -> None:
    options = ControllerManagerOptions()
    assert options.parse(["--vmodule=reflector=4,pycm.kube.*=5", "-v=0"]) == []
    logs = options.config().logs
    assert logs.vmodule == (("reflector", 4), ("pycm.kube.*", 5))
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging(logs.format, logs.verbosity, stream, vmodule=logs.vmodule)
        logging.getLogger("pycm.cache.reflector").debug("from the reflector")
        logging.getLogger("pycm.kube.client").debug("from the client")
        logging.getLogger("pycm.cache.fifo").debug("from the fifo")
        logging.getLogger("pycm.cache.fifo").info("fifo info")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    text = stream.getvalue()
    assert "from the reflector" in text and "from the client" in text
    assert "from the fifo" not in text and "fifo info" in text


def test_tls_names_as_cliflag() -> None:
    assert tls_version("") is ssl.TLSVersion.TLSv1_2
    assert tls_version("VersionTLS13") is ssl.TLSVersion.TLSv1_3
    assert cipher_suites(["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"]) == (
        "ECDHE-RSA-AES128-GCM-SHA256",
    )
    assert _errors(
        ["--tls-min-version=VersionTLS13", "--tls-cipher-suites=TLS_AES_128_GCM_SHA256"]
    ) == ["cipher suites may not be specified when --tls-min-version is 'VersionTLS13'"]


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> str:
    """A TLS handshake in memory: the version agreed, or "refused"."""
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    s = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(20):
        for key, side in (("c", c), ("s", s)):
            if done[key]:
                continue
            try:
                side.do_handshake()
                done[key] = True
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError:
                return "refused"
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return str(c.version())
    return "stuck"


def test_tls_min_version_and_cipher_suites_reach_the_servers_context(tmp_path: Path) -> None:
    cert = load_or_generate(
        cert_file=None, key_file=None, cert_dir=str(tmp_path), hosts=["localhost"]
    )
    client = ssl.create_default_context(cafile=cert.cert_file)
    client.maximum_version = ssl.TLSVersion.TLSv1_2
    tls13 = server_ssl_context(cert, minimum_version=tls_version("VersionTLS13"))
    assert _handshake(tls13, client) == "refused"  # the client tops out at TLS 1.2
    default = server_ssl_context(cert, minimum_version=tls_version(""))
    assert _handshake(default, client) == "TLSv1.2"
    only = server_ssl_context(
        cert, ciphers=cipher_suites(["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"])
    )
    # ECDHE-RSA needs an RSA certificate; the self-signed pair is ECDSA or RSA: whichever,
    # the server offers no other TLS 1.2 suite than the one named.
    names = {c["name"] for c in only.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert names == {"ECDHE-RSA-AES256-GCM-SHA384"}


def test_review_cache_ttls_are_kcm_flags() -> None:
    options = ControllerManagerOptions()
    assert (
        options.parse(
            [
                "--authentication-token-webhook-cache-ttl=30s",
                "--authorization-webhook-cache-authorized-ttl=1m",
                "--authorization-webhook-cache-unauthorized-ttl=5s",
            ]
        )
        == []
    )
    config = options.config()
    assert config.authentication.token_webhook_cache_ttl == 30.0
    assert config.authorization.webhook_cache_authorized_ttl == 60.0
    assert config.authorization.webhook_cache_unauthorized_ttl == 5.0
