"""The handler chain through a real secure server: authentication, authorization, panic
recovery, request logging, cache control, and the order the layers are in."""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from pycm.server import LAYERS, DelegatingAuthorizer, DelegatingTokenReviewer
from pycm.server.authentication import get_user
from pycm.server.request_info import get_request_info
from pycm.server.review_limiter import DEFAULT_CLIENT_BURST, DEFAULT_CLIENT_QPS
from pycm.server.subjectaccessreview import AuthorizationError
from pycm.server.tokenreview import TokenReviewError
from pycm.server.user import UserInfo
from pycm.trace.bus import Bus
from pycm.trace.kinds import HandlerChainBuilt
from pycm.util.clock import FakeClock
from tests.server.conftest import (
    ClientFor,
    FakeAuthorizer,
    FakePoster,
    FakeTokenReviewer,
    Serve,
    bearer,
)


def _status(code: int, reason: str, message: str) -> dict[str, object]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code,
    }


async def _whoami(request: Request) -> Response:
    user = get_user(request.scope)
    info = get_request_info(request.scope)
    return JSONResponse(
        {
            "user": user.name,
            "groups": list(user.groups),
            "verb": info.verb,
            "authorization": request.headers.get("authorization"),
        }
    )


async def _boom(request: Request) -> Response:
    raise RuntimeError("secret-detail-from-the-exception")


ROUTES = [
    Route("/whoami", _whoami, methods=["GET", "POST"]),
    Route("/boom", _boom),
    Route(
        "/cached", lambda request: PlainTextResponse("x", headers={"Cache-Control": "max-age=5"})
    ),
]


@pytest.mark.asyncio
async def test_handler_chain_built_event_lists_kcm_order_outermost_first(
    serve: Serve, bus: Bus
) -> None:
    await serve()
    built = [e for e in bus._ring if isinstance(e, HandlerChainBuilt)]
    assert [(e.layers, e.count, e.secure) for e in built] == [
        (
            "panic_recovery,request_logging,request_body_limit,cache_control,request_info,"
            "authentication,authorization",
            7,
            True,
        )
    ]
    assert ",".join(LAYERS) == built[0].layers


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("headers", "status", "user"),
    [
        pytest.param(bearer("alice-token"), 200, "alice", id="valid-token"),
        pytest.param({"Authorization": "bearer alice-token"}, 200, "alice", id="scheme-any-case"),
        pytest.param(bearer("wrong-token"), 401, None, id="invalid-token"),
        pytest.param({}, 403, None, id="anonymous"),
        pytest.param({"Authorization": "Basic YWxpY2U6cHc="}, 403, None, id="not-bearer-is-anon"),
        pytest.param({"Authorization": "Bearer"}, 403, None, id="no-token-is-anon"),
    ],
)
async def test_authentication_bearer_token_outcomes(
    serve: Serve,
    client_for: ClientFor,
    headers: dict[str, str],
    status: int,
    user: str | None,
) -> None:
    served = await serve(routes=ROUTES)
    response = await client_for(served.server.cert_file).get(
        f"{served.url}/whoami", headers=headers
    )
    assert response.status_code == status
    if user is not None:
        assert response.json()["user"] == user


@pytest.mark.asyncio
async def test_authentication_invalid_token_is_401_status_without_asking_the_authorizer(
    serve: Serve, client_for: ClientFor
) -> None:
    served = await serve()
    response = await client_for(served.server.cert_file).get(
        f"{served.url}/healthz", headers=bearer("wrong-token")
    )
    assert response.status_code == 401  # even on an always-allowed path: kube fails on error
    assert response.headers["content-type"] == "application/json"
    assert response.json() == _status(401, "Unauthorized", "Unauthorized")
    assert served.authorizer.calls == []


@pytest.mark.asyncio
async def test_authentication_valid_token_adds_authenticated_group_and_strips_the_header(
    serve: Serve, client_for: ClientFor
) -> None:
    served = await serve(routes=ROUTES)
    response = await client_for(served.server.cert_file).post(
        f"{served.url}/whoami", headers=bearer("alice-token")
    )
    assert response.json() == {
        "user": "alice",
        "groups": ["devs", "system:authenticated"],
        "verb": "post",
        "authorization": None,
    }
    [attrs] = served.authorizer.calls
    assert (attrs.user.name, attrs.user.groups, attrs.verb, attrs.path) == (
        "alice",
        ("devs", "system:authenticated"),
        "post",
        "/whoami",
    )
    assert attrs.resource_request is False


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
async def test_authorization_always_allow_paths_open_to_anonymous(
    serve: Serve, client_for: ClientFor, path: str
) -> None:
    served = await serve()
    response = await client_for(served.server.cert_file).get(f"{served.url}{path}")
    assert (response.status_code, response.text) == (200, "ok")
    assert served.authorizer.calls == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/metrics", id="metrics"),
        pytest.param("/healthz/ping", id="per-check-path-not-exact"),
        pytest.param("/healthz/", id="trailing-slash-not-exact"),
    ],
)
async def test_authorization_anonymous_denied_is_403_with_kube_message(
    serve: Serve, client_for: ClientFor, path: str
) -> None:
    served = await serve()
    response = await client_for(served.server.cert_file).get(f"{served.url}{path}")
    assert response.status_code == 403
    assert response.json() == _status(
        403, "Forbidden", f'forbidden: User "system:anonymous" cannot get path "{path}".'
    )
    [attrs] = served.authorizer.calls
    assert (attrs.user.name, attrs.user.groups) == ("system:anonymous", ("system:unauthenticated",))


@pytest.mark.asyncio
async def test_authorization_denied_user_gets_403_with_reason(
    serve: Serve, client_for: ClientFor
) -> None:
    reviewer = FakeTokenReviewer({"bob-token": UserInfo(name="bob")})
    authorizer = FakeAuthorizer(allowed=("alice",), reason="no RBAC policy matched")
    served = await serve(reviewer=reviewer, authorizer=authorizer)
    response = await client_for(served.server.cert_file).get(
        f"{served.url}/metrics", headers=bearer("bob-token")
    )
    assert response.status_code == 403
    assert response.json()["message"] == (
        'forbidden: User "bob" cannot get path "/metrics".: no RBAC policy matched'
    )


@pytest.mark.asyncio
async def test_authorization_allowed_user_reads_metrics(
    serve: Serve, client_for: ClientFor
) -> None:
    served = await serve()
    response = await client_for(served.server.cert_file).get(
        f"{served.url}/metrics", headers=bearer("alice-token")
    )
    assert response.status_code == 200


@pytest.mark.asyncio
async def test_authorization_system_masters_group_is_always_allowed(
    serve: Serve, client_for: ClientFor
) -> None:
    root = UserInfo(name="root", groups=("system:masters",))
    served = await serve(reviewer=FakeTokenReviewer({"root-token": root}), allowed=())
    response = await client_for(served.server.cert_file).get(
        f"{served.url}/metrics", headers=bearer("root-token")
    )
    assert response.status_code == 200
    assert served.authorizer.calls == []


@pytest.mark.asyncio
async def test_authorization_authorizer_error_is_500_without_detail(
    serve: Serve, client_for: ClientFor
) -> None:
    authorizer = FakeAuthorizer()
    authorizer.error = AuthorizationError("SubjectAccessReview failed: secret-host:6443")
    served = await serve(authorizer=authorizer)
    response = await client_for(served.server.cert_file).get(f"{served.url}/metrics")
    assert (response.status_code, response.text) == (500, "Internal Server Error")


@pytest.mark.asyncio
async def test_panic_recovery_returns_500_and_the_server_keeps_serving(
    serve: Serve, client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    served = await serve(routes=ROUTES)
    client = client_for(served.server.cert_file)
    with caplog.at_level(logging.ERROR, logger="pycm.server.panic"):
        broken = await client.get(f"{served.url}/boom", headers=bearer("alice-token"))
    assert (broken.status_code, broken.text) == (500, "Internal Server Error")
    assert "secret-detail" not in broken.text
    [record] = [r for r in caplog.records if r.name == "pycm.server.panic"]
    assert "/boom" in record.getMessage()
    assert record.exc_info is not None
    after = await client.get(f"{served.url}/whoami", headers=bearer("alice-token"))
    assert after.status_code == 200


@pytest.mark.asyncio
async def test_request_logging_records_method_path_status_user(
    serve: Serve, client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    served = await serve(routes=ROUTES)
    client = client_for(served.server.cert_file)
    with caplog.at_level(logging.DEBUG, logger="pycm.server.http"):
        await client.get(f"{served.url}/whoami", headers=bearer("alice-token"))
        await client.get(f"{served.url}/metrics")
        await client.get(f"{served.url}/boom", headers=bearer("alice-token"))
    records = [r for r in caplog.records if r.name == "pycm.server.http"]
    fields = [
        (r.http_method, r.http_path, r.http_status, r.user, r.levelname)  # type: ignore[attr-defined]
        for r in records
    ]
    assert fields == [
        ("GET", "/whoami", 200, "alice", "DEBUG"),
        ("GET", "/metrics", 403, "system:anonymous", "DEBUG"),
        ("GET", "/boom", 500, "alice", "INFO"),
    ]
    assert all(r.duration_ms >= 0 for r in records)  # type: ignore[attr-defined]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/healthz", "no-cache, private", id="default"),
        pytest.param("/cached", "max-age=5", id="handler-set-kept"),
    ],
)
async def test_cache_control_default_unless_the_handler_set_one(
    serve: Serve, client_for: ClientFor, path: str, expected: str
) -> None:
    served = await serve(routes=ROUTES)
    response = await client_for(served.server.cert_file).get(
        f"{served.url}{path}", headers=bearer("alice-token")
    )
    assert response.headers.get_list("cache-control") == [expected]


@pytest.mark.asyncio
async def test_configz_serves_the_given_mapping_to_an_allowed_user(
    serve: Serve, client_for: ClientFor
) -> None:
    configz = {"kubecontrollermanager": {"Generic": {"Controllers": ["*"]}}}
    served = await serve(configz=configz)
    client = client_for(served.server.cert_file)
    response = await client.get(f"{served.url}/configz", headers=bearer("alice-token"))
    assert response.headers["content-type"] == "application/json"
    assert orjson.loads(response.content) == configz
    configz["later"] = {"x": 1}  # read per request
    response = await client.get(f"{served.url}/configz", headers=bearer("alice-token"))
    assert response.json()["later"] == {"x": 1}


@pytest.mark.asyncio
async def test_authentication_and_authorization_caches_spare_the_api_within_ttl(
    serve: Serve, client_for: ClientFor
) -> None:
    clock = FakeClock()

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "TokenReview":
            user = {"username": "alice", "groups": ["devs"]}
            return {
                "status": {"authenticated": body["spec"]["token"] == "alice-token", "user": user}
            }
        return {"status": {"allowed": body["spec"]["user"] == "alice"}}

    poster = FakePoster(answer)
    served = await serve(
        reviewer=DelegatingTokenReviewer(poster, clock=clock),
        authorizer=DelegatingAuthorizer(poster, clock=clock),
    )
    client = client_for(served.server.cert_file)

    async def scrape() -> int:
        response = await client.get(f"{served.url}/metrics", headers=bearer("alice-token"))
        return response.status_code

    assert [await scrape(), await scrape()] == [200, 200]
    assert [body["kind"] for _, body in poster.calls] == ["TokenReview", "SubjectAccessReview"]
    clock.advance(10.0)  # KCM's 10 s TTLs have run out: both are asked again
    assert await scrape() == 200
    assert [body["kind"] for _, body in poster.calls] == ["TokenReview", "SubjectAccessReview"] * 2


@pytest.mark.asyncio
async def test_bogus_tokens_from_one_client_cost_a_bounded_number_of_reviews(
    serve: Serve, client_for: ClientFor
) -> None:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "TokenReview":
            user = {"username": "alice", "groups": ["devs"]}
            return {
                "status": {"authenticated": body["spec"]["token"] == "alice-token", "user": user}
            }
        return {"status": {"allowed": body["spec"]["user"] == "alice"}}

    poster = FakePoster(answer)
    served = await serve(
        reviewer=DelegatingTokenReviewer(poster), authorizer=DelegatingAuthorizer(poster)
    )
    client = client_for(served.server.cert_file)
    url = f"{served.url}/metrics"
    assert (await client.get(url, headers=bearer("alice-token"))).status_code == 200
    start = time.monotonic()
    statuses = {
        (await client.get(url, headers=bearer(f"bogus-{n}"))).status_code for n in range(60)
    }
    elapsed = time.monotonic() - start
    assert statuses == {401}
    reviews = [body for _, body in poster.calls if body["kind"] == "TokenReview"]
    # The good token's review, the client's burst, and what its bucket refilled meanwhile.
    assert len(reviews) <= 1 + DEFAULT_CLIENT_BURST + int(DEFAULT_CLIENT_QPS * elapsed) + 1
    # The good token is cached: it still works, from the same client, during the flood.
    assert (await client.get(url, headers=bearer("alice-token"))).status_code == 200


class _FailingReviewer:
    async def review(self, token: str, *, client: str = "") -> UserInfo | None:
        raise TokenReviewError("TokenReview failed: connection refused")


@pytest.mark.asyncio
async def test_authentication_review_failure_is_401_not_anonymous(
    serve: Serve, client_for: ClientFor
) -> None:
    served = await serve(reviewer=_FailingReviewer())
    client = client_for(served.server.cert_file)
    response = await client.get(f"{served.url}/metrics", headers=bearer("alice-token"))
    assert response.status_code == 401
    assert "connection refused" not in response.text
    assert served.authorizer.calls == []


@pytest.mark.asyncio
async def test_authentication_refuses_websocket_scopes() -> None:
    from pycm.server.authentication import AnonymousAuthenticator, AuthenticationMiddleware

    reached: list[str] = []
    sent: list[dict[str, object]] = []

    async def app(scope: object, receive: object, send: object) -> None:
        reached.append("app")

    async def receive() -> dict[str, object]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    middleware = AuthenticationMiddleware(app, authenticator=AnonymousAuthenticator())
    await middleware({"type": "websocket", "path": "/ws", "headers": []}, receive, send)
    assert (reached, sent) == ([], [{"type": "websocket.close", "code": 1008}])
