"""Request info: kube's RequestInfoFactory rules for verbs and resource paths."""

from __future__ import annotations

import pytest

from pycm.server.request_info import RequestInfo, parse


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        pytest.param("GET", "/metrics", b"", RequestInfo("get", "/metrics"), id="nonresource-get"),
        pytest.param("POST", "/x", b"", RequestInfo("post", "/x"), id="nonresource-post"),
        pytest.param("PUT", "/x", b"", RequestInfo("put", "/x"), id="nonresource-put"),
        pytest.param("DELETE", "/x", b"", RequestInfo("delete", "/x"), id="nonresource-delete"),
        pytest.param(
            "HEAD", "/healthz", b"", RequestInfo("head", "/healthz"), id="nonresource-head"
        ),
        pytest.param("GET", "/api", b"", RequestInfo("get", "/api"), id="api-discovery"),
        pytest.param(
            "GET", "/apis/apps", b"", RequestInfo("get", "/apis/apps"), id="group-discovery"
        ),
        pytest.param(
            "GET",
            "/api/v1/pods",
            b"",
            RequestInfo("list", "/api/v1/pods", True, "api", "", "v1", "", "pods"),
            id="core-list",
        ),
        pytest.param(
            "GET",
            "/api/v1/pods",
            b"watch=true",
            RequestInfo("watch", "/api/v1/pods", True, "api", "", "v1", "", "pods"),
            id="watch-param",
        ),
        pytest.param(
            "GET",
            "/apis/apps/v1/watch/namespaces/ns/deployments",
            b"",
            RequestInfo(
                "watch",
                "/apis/apps/v1/watch/namespaces/ns/deployments",
                True,
                "apis",
                "apps",
                "v1",
                "ns",
                "deployments",
            ),
            id="watch-prefix",
        ),
        pytest.param(
            "GET",
            "/apis/apps/v1/namespaces/ns/deployments/web/status",
            b"",
            RequestInfo(
                "get",
                "/apis/apps/v1/namespaces/ns/deployments/web/status",
                True,
                "apis",
                "apps",
                "v1",
                "ns",
                "deployments",
                "status",
                "web",
            ),
            id="get-subresource",
        ),
        pytest.param(
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            b"",
            RequestInfo(
                "create",
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
                True,
                "apis",
                "coordination.k8s.io",
                "v1",
                "kube-system",
                "leases",
            ),
            id="create",
        ),
        pytest.param(
            "DELETE",
            "/api/v1/namespaces/ns/pods",
            b"",
            RequestInfo(
                "deletecollection",
                "/api/v1/namespaces/ns/pods",
                True,
                "api",
                "",
                "v1",
                "ns",
                "pods",
            ),
            id="deletecollection",
        ),
        pytest.param(
            "PUT",
            "/api/v1/namespaces/ns",
            b"",
            RequestInfo(
                "update",
                "/api/v1/namespaces/ns",
                True,
                "api",
                "",
                "v1",
                "ns",
                "namespaces",
                "",
                "ns",
            ),
            id="namespace-object",
        ),
        pytest.param(
            "PATCH",
            "/api/v1/namespaces/ns/status",
            b"",
            RequestInfo(
                "patch",
                "/api/v1/namespaces/ns/status",
                True,
                "api",
                "",
                "v1",
                "ns",
                "namespaces",
                "status",
                "ns",
            ),
            id="namespace-subresource",
        ),
    ],
)
def test_request_info_parse_cases(
    method: str, path: str, query: bytes, expected: RequestInfo
) -> None:
    assert parse(method, path, query) == expected
