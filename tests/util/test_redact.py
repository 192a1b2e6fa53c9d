"""The one redaction rule: secret-named settings, header values, URL passwords."""

from __future__ import annotations

import pytest

from pycm.util.redact import (
    WITHHELD,
    is_secret_name,
    redact_mapping,
    redact_text,
    redact_value,
    without_userinfo,
)


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        pytest.param(
            "otlp-endpoint",
            "http://user:SECRET@127.0.0.1:4317",
            "http://user:xxxxx@127.0.0.1:4317",
            id="url-password",
        ),
        pytest.param(
            "master", "https://u:p%40ss@h:6443/x?y=1", "https://u:xxxxx@h:6443/x?y=1", id="pct"
        ),
        pytest.param("master", "https://u:p@ss@h:6443", "https://u:xxxxx@h:6443", id="raw-at"),
        pytest.param("master", "https://user@h:6443", "https://user@h:6443", id="user-only-kept"),
        pytest.param("master", "https://h:6443/a@b", "https://h:6443/a@b", id="at-in-path"),
        pytest.param(
            "otlp-endpoint",
            "http://h/v1?access_token=SECRET&x=1",
            f"http://h/v1?access_token={WITHHELD}&x=1",
            id="query-token",
        ),
        pytest.param(
            "otlp-headers",
            "Authorization=Bearer SECRET,x-tenant=acme",
            f"Authorization={WITHHELD},x-tenant={WITHHELD}",
            id="headers",
        ),
        pytest.param("bootstrap-token", "SECRET", WITHHELD, id="token-flag"),
        pytest.param("db_password", "SECRET", WITHHELD, id="password-underscore"),
        pytest.param("client-secret", "SECRET", WITHHELD, id="secret-flag"),
        pytest.param("api-key", "SECRET", WITHHELD, id="api-key"),
        pytest.param("token-auth-file", "/etc/tokens.csv", "/etc/tokens.csv", id="path-flag"),
        pytest.param("kube-api-qps", "20", "20", id="plain"),
        pytest.param("bootstrap-token", "", "", id="empty-stays-empty"),
    ],
)
def test_redact_value_table(name: str, value: str, shown: str) -> None:
    assert redact_value(name, value) == shown


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        pytest.param("token", True, id="token"),
        pytest.param("OTEL_EXPORTER_OTLP_HEADERS", False, id="headers-not-secret-name"),
        pytest.param("secrets", True, id="plural"),
        pytest.param("tokenizer", False, id="not-a-segment"),
        pytest.param("key", False, id="bare-key"),
        pytest.param("tls-private-key-file", False, id="key-file-path"),
        pytest.param("private-key", True, id="private-key"),
    ],
)
def test_is_secret_name_rule(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_redact_text_masks_every_url_password_in_free_text() -> None:
    text = "dial http://a:one@h1 and grpc+tls://b:two@h2:1/p failed"
    assert redact_text(text) == "dial http://a:xxxxx@h1 and grpc+tls://b:xxxxx@h2:1/p failed"


def test_redact_mapping_redacts_by_key_name_at_any_depth() -> None:
    tree = {
        "pycm": {"otlp-endpoint": "http://u:pw@h", "token": "t", "list": ["http://u:pw@h"]},
        "n": 3,
    }
    assert redact_mapping(tree) == {
        "pycm": {
            "otlp-endpoint": "http://u:xxxxx@h",
            "token": WITHHELD,
            "list": ["http://u:xxxxx@h"],
        },
        "n": 3,
    }


def test_without_userinfo_drops_user_and_password() -> None:
    assert without_userinfo("http://u:pw@127.0.0.1:4317") == "http://127.0.0.1:4317"
    assert without_userinfo("http://127.0.0.1:4317") == "http://127.0.0.1:4317"
