"""Secrets through the official ``kubernetes`` client and over HTTP: stringData merged into
data and never stored, base64 enforced as kube's decoder enforces it, typed secrets' keys,
``immutable``, the type field selector and the table kubectl prints."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def raw(api: client.ApiClient, method: str, path: str, body: Any = None, **headers: str) -> Any:
    """A request's decoded JSON answer (what the server sent, not the client's model)."""
    request = api.param_serialize(
        method,
        path,
        header_params={"Content-Type": "application/json", **headers},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*request)
    response.read()
    return json.loads(response.data)


def error(err: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(err.body)
    return body


def test_secret_string_data_is_merged_into_data_and_never_stored(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    created = core.create_namespaced_secret(
        namespace,
        {
            "metadata": {"name": "s"},
            "data": {"keep": b64("old"), "over": b64("old")},
            "stringData": {"over": "new", "plain": "text"},
        },
    )
    assert created.data == {"keep": b64("old"), "over": b64("new"), "plain": b64("text")}
    assert created.string_data is None and created.type == "Opaque"
    stored = raw(api, "GET", f"/api/v1/namespaces/{namespace}/secrets/s")
    assert "stringData" not in stored
    patched = core.patch_namespaced_secret("s", namespace, {"stringData": {"keep": "patched"}})
    assert patched.data["keep"] == b64("patched") and patched.string_data is None
    assert "stringData" not in raw(api, "GET", f"/api/v1/namespaces/{namespace}/secrets/s")


@pytest.mark.parametrize(
    ("value", "offset"),
    [
        pytest.param("not base64!", 3, id="space"),
        pytest.param("aGVsbG8", 4, id="unpadded"),
        pytest.param("aGVsbG8=x", 8, id="after-padding"),
    ],
)
def test_secret_data_that_is_not_base64_is_a_bad_request(
    api: client.ApiClient, namespace: str, value: str, offset: int
) -> None:
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_secret(namespace, {"metadata": {"name": "b"}, "data": {"k": value}})
    assert err.value.status == 400
    assert error(err.value)["message"] == (
        f'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input '
        f"byte {offset}"
    )


def test_secret_tls_without_its_key_is_invalid(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_secret(
            namespace,
            {"metadata": {"name": "t"}, "type": "kubernetes.io/tls", "data": {"tls.crt": b64("c")}},
        )
    assert err.value.status == 422
    assert error(err.value)["message"] == 'Secret "t" is invalid: data[tls.key]: Required value'


def test_secret_dockerconfigjson_error_never_shows_the_secret(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    secret_text = "{hunter2"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_secret(
            namespace,
            {
                "metadata": {"name": "d"},
                "type": "kubernetes.io/dockerconfigjson",
                "data": {".dockerconfigjson": b64(secret_text)},
            },
        )
    assert err.value.status == 422
    assert "hunter2" not in err.value.body and b64(secret_text) not in err.value.body
    assert error(err.value)["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: \"<secret contents redacted>\": invalid character 'h' "
            "looking for beginning of object key string",
            "field": "data[.dockerconfigjson]",
        }
    ]


def test_secret_immutable_refuses_data_changes(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_secret(
        namespace, {"metadata": {"name": "i"}, "immutable": True, "stringData": {"a": "1"}}
    )
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_secret("i", namespace, {"stringData": {"a": "2"}})
    assert err.value.status == 422
    assert error(err.value)["message"] == (
        'Secret "i" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    )
    # Metadata stays writable.
    labelled = core.patch_namespaced_secret("i", namespace, {"metadata": {"labels": {"a": "b"}}})
    assert labelled.metadata.labels == {"a": "b"} and labelled.data == {"a": b64("1")}


def test_secret_list_by_type_and_its_table(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_secret(namespace, {"metadata": {"name": "o"}, "stringData": {"a": "1"}})
    core.create_namespaced_secret(
        namespace,
        {
            "metadata": {"name": "tls"},
            "type": "kubernetes.io/tls",
            "stringData": {"tls.crt": "c", "tls.key": "k"},
        },
    )
    listed = core.list_namespaced_secret(namespace, field_selector="type=kubernetes.io/tls")
    assert [s.metadata.name for s in listed.items] == ["tls"]
    table = raw(api, "GET", f"/api/v1/namespaces/{namespace}/secrets", Accept=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert [r["cells"][:3] for r in table["rows"]] == [
        ["o", "Opaque", 1],
        ["tls", "kubernetes.io/tls", 2],
    ]
