"""RequestBodyLimitMiddleware in the secure chain: 413 past a route's bound, before
authentication, for a declared length and for a chunked body."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from pycm.server import (
    DelegatingAuthenticator,
    HealthRegistry,
    SecureServer,
    SecureServingConfig,
    build_routes,
)
from pycm.server.body_limit import DEFAULT_MAX_REQUEST_BODY, RequestBodyLimitMiddleware
from pycm.trace.bus import Bus
from tests.server.conftest import (
    ALICE,
    ClientFor,
    FakeAuthorizer,
    FakeTokenReviewer,
    Serve,
    bearer,
)


async def _echo_length(request: Request) -> Response:
    return PlainTextResponse(str(len(await request.body())))


ROUTES = [
    Route("/echo", _echo_length, methods=["POST"]),
    Route("/small", _echo_length, methods=["POST"]),
]


async def _chunks(size: int, chunk: int = 4096) -> AsyncIterator[bytes]:
    for start in range(0, size, chunk):
        yield b"x" * min(chunk, size - start)


@pytest.mark.asyncio
async def test_body_limit_declared_length_over_the_bound_is_413_before_authentication(
    serve: Serve, client_for: ClientFor
) -> None:
    served = await serve(routes=ROUTES)
    client = client_for(served.server.cert_file)
    body = b"x" * (DEFAULT_MAX_REQUEST_BODY + 1)
    response = await client.post(f"{served.url}/echo", content=body, headers=bearer("bogus"))
    assert response.status_code == 413
    assert response.json()["reason"] == "RequestEntityTooLarge"
    assert served.reviewer.calls == []  # refused before the token was reviewed
    ok = await client.post(f"{served.url}/echo", content=b"x" * 10, headers=bearer("alice-token"))
    assert (ok.status_code, ok.text) == (200, "10")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("size", "status"),
    [
        pytest.param(DEFAULT_MAX_REQUEST_BODY, 200, id="at-the-bound"),
        pytest.param(DEFAULT_MAX_REQUEST_BODY + 1, 413, id="one-past"),
    ],
)
async def test_body_limit_chunked_body_is_counted_as_it_is_read(
    serve: Serve, client_for: ClientFor, size: int, status: int
) -> None:
    served = await serve(routes=ROUTES)
    client = client_for(served.server.cert_file)
    response = await client.post(
        f"{served.url}/echo", content=_chunks(size), headers=bearer("alice-token")
    )
    assert response.status_code == status
    if status == 200:
        assert response.text == str(size)


@pytest.mark.asyncio
async def test_body_limit_per_route_bound(client_for: ClientFor) -> None:
    server = SecureServer(
        build_routes(health=HealthRegistry(bus=Bus()), metrics_registry=None, routes=ROUTES),
        SecureServingConfig(bind_address="127.0.0.1", port=0),
        authenticator=DelegatingAuthenticator(FakeTokenReviewer({"alice-token": ALICE})),
        authorizer=FakeAuthorizer(["alice"]),
        body_limits={"/small": 100},
        bus=Bus(),
    )
    host, port = await server.start()
    try:
        client = client_for(server.cert_file)
        url = f"https://{host}:{port}"
        small = await client.post(f"{url}/small", content=b"x" * 101, headers=bearer("alice-token"))
        echo = await client.post(f"{url}/echo", content=b"x" * 101, headers=bearer("alice-token"))
        assert (small.status_code, echo.status_code) == (413, 200)
    finally:
        await server.stop()


def test_body_limit_layer_name() -> None:
    assert RequestBodyLimitMiddleware.NAME == "request_body_limit"
