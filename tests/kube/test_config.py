"""Loading client configuration: kubeconfig files, --master, KUBECONFIG, in-cluster, tokens."""

from __future__ import annotations

import base64
import os
import ssl
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml

from pycm.kube.auth import Authenticator
from pycm.kube.config import (
    DEFAULT_USER_AGENT,
    ClientConfig,
    ConfigError,
    load_config,
)
from pycm.kube.transport import build_ssl_context
from tests.kube.conftest import AutoClock


def _kubeconfig(
    path: Path,
    *,
    server: str = "https://127.0.0.1:6443",
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    contexts: tuple[str, ...] = ("main",),
    current: str | None = "main",
) -> Path:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": "u", "user": user or {"token": "abc"}}],
        "contexts": [
            {"name": n, "context": {"cluster": "c", "user": "u", "namespace": f"ns-{n}"}}
            for n in contexts
        ],
    }
    if current is not None:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture(autouse=True)
def _no_kubeconfig_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.mark.asyncio
async def test_load_config_token_kubeconfig_reads_server_token_and_namespace(
    tmp_path: Path,
) -> None:
    path = _kubeconfig(tmp_path / "kc", cluster={"insecure-skip-tls-verify": True})
    config = await load_config(str(path), qps=7, burst=9)
    assert config.server == "https://127.0.0.1:6443"
    assert config.token == "abc"
    assert config.insecure_skip_tls_verify is True
    assert config.namespace == "ns-main"
    assert (config.qps, config.burst, config.user_agent) == (7, 9, DEFAULT_USER_AGENT)


@pytest.mark.asyncio
async def test_load_config_ca_data_and_client_cert_build_tls_context(
    tmp_path: Path, ca: trustme.CA
) -> None:
    leaf = ca.issue_cert("pycm-client")
    cert_pem = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
    path = _kubeconfig(
        tmp_path / "kc",
        cluster={"certificate-authority-data": base64.b64encode(ca.cert_pem.bytes()).decode()},
        user={
            "client-certificate-data": base64.b64encode(cert_pem).decode(),
            "client-key-data": base64.b64encode(leaf.private_key_pem.bytes()).decode(),
        },
    )
    config = await load_config(str(path))
    assert config.token is None
    assert config.insecure_skip_tls_verify is False
    assert config.ca_file is not None
    assert _read(config.ca_file) == ca.cert_pem.bytes()
    assert config.cert_file is not None
    assert config.key_file is not None
    assert _read(config.cert_file) == cert_pem
    ctx = build_ssl_context(config)
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.check_hostname is True
    assert any("pycm" not in str(c) for c in ctx.get_ca_certs())
    assert len(ctx.get_ca_certs()) == 1


def test_build_ssl_context_insecure_skips_verification() -> None:
    ctx = build_ssl_context(
        ClientConfig(server="https://127.0.0.1:1", insecure_skip_tls_verify=True)
    )
    assert ctx.verify_mode == ssl.CERT_NONE
    assert ctx.check_hostname is False


def test_build_ssl_context_ca_data_trusts_only_that_ca(ca: trustme.CA) -> None:
    ctx = build_ssl_context(ClientConfig(server="https://127.0.0.1:1", ca_data=ca.cert_pem.bytes()))
    assert len(ctx.get_ca_certs()) == 1


@pytest.mark.asyncio
async def test_load_config_master_overrides_kubeconfig_server(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "kc")
    config = await load_config(str(path), master="http://127.0.0.1:8080/")
    assert config.server == "http://127.0.0.1:8080"
    assert config.token == "abc"


@pytest.mark.asyncio
async def test_load_config_master_only_has_no_credentials() -> None:
    config = await load_config(master="http://127.0.0.1:8080")
    assert config.server == "http://127.0.0.1:8080"
    assert (config.token, config.token_file, config.cert_file) == (None, None, None)


@pytest.mark.asyncio
async def test_load_config_context_selects_namespace(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "kc", contexts=("main", "other"))
    config = await load_config(str(path), context="other")
    assert config.namespace == "ns-other"


@pytest.mark.asyncio
async def test_load_config_kubeconfig_env_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _kubeconfig(tmp_path / "kc", server="http://127.0.0.1:7001")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}{os.pathsep}{path}")
    config = await load_config()
    assert config.server == "http://127.0.0.1:7001"


@pytest.mark.asyncio
async def test_load_config_user_agent_name_is_used_as_given(tmp_path: Path) -> None:
    config = await load_config(master="http://127.0.0.1:1", user_agent="deployment-controller")
    assert config.user_agent == "deployment-controller"


@pytest.mark.parametrize(
    ("content", "context", "fragment"),
    [
        pytest.param(None, None, "kubeconfig file not found", id="missing-file"),
        pytest.param("clusters: [unclosed", None, "not YAML", id="malformed-yaml"),
        pytest.param("- a\n- b\n", None, "mapping at the top level", id="not-a-mapping"),
        pytest.param("clusters: 3\n", None, "must be a list of named entries", id="bad-section"),
        pytest.param("valid", "nope", "context 'nope' not found", id="unknown-context"),
        pytest.param("no-current", None, "sets no current-context", id="no-current-context"),
    ],
)
@pytest.mark.asyncio
async def test_load_config_bad_kubeconfig_raises_config_error(
    tmp_path: Path, content: str | None, context: str | None, fragment: str
) -> None:
    path = tmp_path / "kc"
    if content == "valid":
        _kubeconfig(path)
    elif content == "no-current":
        _kubeconfig(path, current=None)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError) as info:
        await load_config(str(path), context=context)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)


@pytest.mark.asyncio
async def test_load_config_nothing_configured_raises_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no configuration: pass --kubeconfig or --master"):
        await load_config(environ={}, service_account_dir=tmp_path / "none")


def _service_account(tmp_path: Path, ca: trustme.CA) -> Path:
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("sa-token-1\n")
    (sa / "ca.crt").write_bytes(ca.cert_pem.bytes())
    (sa / "namespace").write_text("kube-system")
    return sa


@pytest.mark.asyncio
async def test_load_config_in_cluster_reads_env_and_service_account(
    tmp_path: Path, ca: trustme.CA, monkeypatch: pytest.MonkeyPatch
) -> None:
    sa = _service_account(tmp_path, ca)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    config = await load_config(service_account_dir=sa)
    assert config.server == "https://127.0.0.1:6443"
    assert config.token_file == str(sa / "token")
    assert config.ca_file == str(sa / "ca.crt")
    assert config.namespace == "kube-system"
    assert config.in_cluster
    assert await Authenticator(config).header() == "Bearer sa-token-1"


@pytest.mark.asyncio
async def test_load_config_in_cluster_missing_token_says_why(
    tmp_path: Path, ca: trustme.CA
) -> None:
    sa = _service_account(tmp_path, ca)
    (sa / "token").unlink()
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    with pytest.raises(ConfigError, match="Service token file does not exist"):
        await load_config(environ=env, service_account_dir=sa)


@pytest.mark.asyncio
async def test_authenticator_token_file_rotation_is_picked_up_after_a_minute(
    tmp_path: Path,
) -> None:
    token = tmp_path / "token"
    token.write_text("one")
    clock = AutoClock()
    auth = Authenticator(ClientConfig(server="http://127.0.0.1:1", token_file=str(token)), clock)
    assert await auth.header() == "Bearer one"
    token.write_text("two")
    clock.advance(59)
    assert await auth.header() == "Bearer one"
    clock.advance(1)
    assert await auth.header() == "Bearer two"


@pytest.mark.asyncio
async def test_authenticator_token_file_is_re_read_at_once_after_a_401(tmp_path: Path) -> None:
    # A bound token rotated and the old one revoked: the 401 drops the cached token (client-go's
    # resettable cached token source), so the next request reads the file without waiting.
    token = tmp_path / "token"
    token.write_text("one")
    clock = AutoClock()
    auth = Authenticator(ClientConfig(server="http://127.0.0.1:1", token_file=str(token)), clock)
    assert await auth.header() == "Bearer one"
    token.write_text("two")
    clock.advance(1)
    assert await auth.header() == "Bearer one"
    auth.unauthorized()
    assert await auth.header() == "Bearer two"
    token.write_text("three")
    clock.advance(1)
    assert await auth.header() == "Bearer two"  # and then cached for a minute again


@pytest.mark.asyncio
async def test_authenticator_static_token_is_kept_after_a_401() -> None:
    auth = Authenticator(ClientConfig(server="http://127.0.0.1:1", token="static"), AutoClock())
    auth.unauthorized()
    assert await auth.header() == "Bearer static"


@pytest.mark.asyncio
async def test_authenticator_unreadable_token_file_keeps_last_good_token(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one")
    clock = AutoClock()
    auth = Authenticator(ClientConfig(server="http://127.0.0.1:1", token_file=str(token)), clock)
    assert await auth.header() == "Bearer one"
    token.unlink()
    clock.advance(61)
    assert await auth.header() == "Bearer one"


@pytest.mark.asyncio
async def test_load_config_kubeconfig_token_file_is_kept_for_rotation(tmp_path: Path) -> None:
    (tmp_path / "tok").write_text("from-file")
    path = _kubeconfig(tmp_path / "kc", user={"tokenFile": "tok"})
    config = await load_config(str(path))
    assert config.token_file == str(tmp_path / "tok")
    assert await Authenticator(config).header() == "Bearer from-file"


@pytest.mark.asyncio
async def test_load_config_exec_plugin_token_is_loaded(tmp_path: Path) -> None:
    script = tmp_path / "plugin.sh"
    script.write_text(
        "#!/bin/sh\n"
        'echo \'{"apiVersion": "client.authentication.k8s.io/v1beta1", '
        '"kind": "ExecCredential", "status": {"token": "exec-tok"}}\'\n'
    )
    script.chmod(0o755)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": str(script),
            "interactiveMode": "Never",
        }
    }
    config = await load_config(str(_kubeconfig(tmp_path / "kc", user=user)))
    assert config.token == "exec-tok"
    assert config.auth_refresh is not None
    assert await Authenticator(config).header() == "Bearer exec-tok"


def test_client_config_repr_hides_token() -> None:
    assert "s3cret" not in repr(ClientConfig(server="http://127.0.0.1:1", token="s3cret"))
