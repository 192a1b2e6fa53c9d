"""Secure and insecure serving against real servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from pathlib import Path

import httpx
import pytest
import trustme
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from pycm.server import (
    AlwaysAllowAuthorizer,
    AnonymousAuthenticator,
    HealthRegistry,
    InsecureServer,
    SecureServer,
    SecureServingConfig,
    build_routes,
)
from pycm.server.certs import CERT_DIR_CERT, CERT_DIR_KEY, ServingCert, server_ssl_context
from pycm.server.serving import is_loopback
from pycm.trace.bus import Bus
from pycm.trace.kinds import HandlerChainBuilt, ServingStarted, ServingStopped
from tests.server.conftest import ClientFor, Serve


def _config(**kwargs: object) -> SecureServingConfig:
    return SecureServingConfig(bind_address="127.0.0.1", port=0, **kwargs)  # type: ignore[arg-type]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "host", [pytest.param("127.0.0.1", id="ip"), pytest.param("localhost", id="dns")]
)
async def test_secure_server_self_signed_verifies_against_its_cert_file(
    serve: Serve, client_for: ClientFor, host: str
) -> None:
    served = await serve()
    port = served.server.port
    client = client_for(served.server.cert_file)
    response = await client.get(f"https://{host}:{port}/healthz")
    assert (response.status_code, response.text) == (200, "ok")


@pytest.mark.asyncio
async def test_secure_server_self_signed_is_rejected_by_a_client_without_its_ca(
    serve: Serve, ca: trustme.CA, tmp_path: Path, client_for: ClientFor
) -> None:
    served = await serve()
    other = tmp_path / "other-ca.pem"
    ca.cert_pem.write_to_path(str(other))
    client = client_for(other)
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        await client.get(f"{served.url}/healthz")


@pytest.mark.asyncio
async def test_secure_server_given_files_serves_them(
    serve: Serve, ca: trustme.CA, tmp_path: Path, client_for: ClientFor, bus: Bus
) -> None:
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    cert, key, ca_file = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
    cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    leaf.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    served = await serve(config=_config(tls_cert_file=str(cert), tls_private_key_file=str(key)))
    response = await client_for(ca_file).get(f"{served.url}/healthz")
    assert response.status_code == 200
    started = [e for e in bus._ring if isinstance(e, ServingStarted)]
    assert [(e.secure, e.cert_source, e.port) for e in started] == [
        (True, "files", served.server.port)
    ]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        pytest.param(
            ("garbage", "garbage", None),
            'cannot load the serving certificate "{cert}" and key "{key}": '
            "want a PEM certificate (chain) and a PEM private key",
            id="not-pem",
        ),
        pytest.param(
            ("leaf", "other-key", None),
            'cannot load the serving certificate "{cert}" and key "{key}": '
            "the key is not the certificate's",
            id="key-mismatch",
        ),
        pytest.param(
            ("leaf", "key", "garbage"),
            'cannot load the client CA file "{ca}": no PEM certificate in it',
            id="client-ca-not-pem",
        ),
    ],
)
def test_server_ssl_context_bad_files_one_line_naming_them(
    ca: trustme.CA, tmp_path: Path, files: tuple[str, str, str | None], message: str
) -> None:
    # OpenSSL says "[SSL] PEM lib (_ssl.c:3905)"; the operator needs the file and the reason.
    leaf, other = ca.issue_cert("localhost"), ca.issue_cert("localhost")
    blobs = {
        "garbage": b"not a certificate\n",
        "leaf": b"".join(blob.bytes() for blob in leaf.cert_chain_pems),
        "key": leaf.private_key_pem.bytes(),
        "other-key": other.private_key_pem.bytes(),
    }
    cert, key, ca_file = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
    cert.write_bytes(blobs[files[0]])
    key.write_bytes(blobs[files[1]])
    if files[2] is not None:
        ca_file.write_bytes(blobs[files[2]])
    serving = ServingCert(str(cert), str(key), "files")
    with pytest.raises(OSError) as caught:
        server_ssl_context(serving, client_ca_file=str(ca_file) if files[2] else None)
    assert str(caught.value) == message.format(cert=cert, key=key, ca=ca_file)


@pytest.mark.asyncio
async def test_secure_server_cert_dir_writes_then_reuses_the_pair(
    serve: Serve, tmp_path: Path, client_for: ClientFor
) -> None:
    cert_dir = tmp_path / "certs"
    first = await serve(config=_config(cert_dir=str(cert_dir)))
    cert_bytes = (cert_dir / CERT_DIR_CERT).read_bytes()
    assert first.server.cert_file == str(cert_dir / CERT_DIR_CERT)
    assert (cert_dir / CERT_DIR_KEY).stat().st_mode & 0o077 == 0
    await first.server.stop()
    second = await serve(config=_config(cert_dir=str(cert_dir)))
    assert (cert_dir / CERT_DIR_CERT).read_bytes() == cert_bytes
    response = await client_for(cert_dir / CERT_DIR_CERT).get(f"{second.url}/healthz")
    assert response.status_code == 200
    await second.server.stop()
    assert (cert_dir / CERT_DIR_CERT).read_bytes() == cert_bytes  # kept after stop


@pytest.mark.asyncio
async def test_secure_server_self_signed_without_cert_dir_removes_its_temp_dir_at_stop(
    serve: Serve,
) -> None:
    served = await serve()
    temp_dir = Path(served.server.cert_file).parent
    assert sorted(os.listdir(temp_dir)) == [CERT_DIR_CERT, CERT_DIR_KEY]
    await served.server.stop()
    assert not temp_dir.exists()


@pytest.mark.asyncio
async def test_secure_server_plain_http_to_the_tls_port_gets_no_http_answer(serve: Serve) -> None:
    served = await serve()
    async with httpx.AsyncClient(timeout=5.0) as client:
        with pytest.raises(httpx.TransportError):
            await client.get(f"http://127.0.0.1:{served.server.port}/healthz")


@pytest.mark.asyncio
async def test_secure_server_port_zero_reports_the_bound_port_and_events(
    serve: Serve, bus: Bus
) -> None:
    served = await serve()
    port = served.server.port
    assert port > 0
    await served.server.stop()
    kinds = [
        (type(e).__name__, getattr(e, "port", None))
        for e in bus._ring
        if isinstance(e, HandlerChainBuilt | ServingStarted | ServingStopped)
    ]
    assert kinds == [
        ("HandlerChainBuilt", None),
        ("ServingStarted", port),
        ("ServingStopped", port),
    ]
    assert served.server.bound is None


@pytest.mark.asyncio
async def test_secure_server_tls_min_version_refuses_older_clients(serve: Serve) -> None:
    served = await serve(config=_config(tls_min_version=ssl.TLSVersion.TLSv1_3))
    context = ssl.create_default_context(cafile=served.server.cert_file)
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(OSError):  # an SSL alert or a reset, depending on timing
        _, writer = await asyncio.open_connection("127.0.0.1", served.server.port, ssl=context)
        writer.close()
        await writer.wait_closed()
    context.maximum_version = ssl.TLSVersion.TLSv1_3
    _, writer = await asyncio.open_connection("127.0.0.1", served.server.port, ssl=context)
    writer.close()
    await writer.wait_closed()


@pytest.mark.asyncio
async def test_insecure_server_serves_without_authentication(bus: Bus) -> None:
    app = build_routes(health=HealthRegistry(bus=bus))
    server = InsecureServer(app, bind_address="127.0.0.1", port=0, bus=bus)
    host, port = await server.start()
    try:
        async with httpx.AsyncClient() as client:
            metrics = await client.get(f"http://{host}:{port}/metrics")
            healthz = await client.get(f"http://{host}:{port}/healthz/ping")
    finally:
        await server.stop()
    assert (metrics.status_code, healthz.status_code) == (200, 200)
    chain = [e for e in bus._ring if isinstance(e, HandlerChainBuilt)]
    assert [(e.secure, e.count) for e in chain] == [(False, 7)]
    started = [e for e in bus._ring if isinstance(e, ServingStarted)]
    assert [(e.secure, e.cert_source) for e in started] == [(False, "")]


@pytest.mark.asyncio
async def test_insecure_server_stop_lets_an_in_flight_request_finish() -> None:
    release = asyncio.Event()
    entered = asyncio.Event()

    async def slow(request: Request) -> Response:
        entered.set()
        await release.wait()
        return PlainTextResponse("done")

    app = build_routes(health=HealthRegistry(bus=Bus()), routes=[Route("/slow", slow)])
    server = InsecureServer(app, port=0, bus=Bus())
    _, port = await server.start()
    async with httpx.AsyncClient(timeout=10.0) as client:
        request = asyncio.ensure_future(client.get(f"http://127.0.0.1:{port}/slow"))
        await entered.wait()
        stopping = asyncio.ensure_future(server.stop())
        await asyncio.sleep(0.05)
        assert not stopping.done()
        release.set()
        response = await request
        await stopping
    assert (response.status_code, response.text) == (200, "done")


@pytest.mark.asyncio
async def test_insecure_server_stop_is_bounded_when_a_request_hangs() -> None:
    entered = asyncio.Event()

    async def hang(request: Request) -> Response:
        entered.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    app = build_routes(health=HealthRegistry(bus=Bus()), routes=[Route("/hang", hang)])
    server = InsecureServer(app, port=0, shutdown_timeout=1.0, bus=Bus())
    _, port = await server.start()
    async with httpx.AsyncClient(timeout=10.0) as client:
        request = asyncio.ensure_future(client.get(f"http://127.0.0.1:{port}/hang"))
        await entered.wait()
        began = time.monotonic()
        await server.stop()
        elapsed = time.monotonic() - began
        response = await request
    assert elapsed < 3.0
    assert response.status_code == 500


@pytest.mark.asyncio
async def test_insecure_server_started_twice_is_an_error() -> None:
    server = InsecureServer(build_routes(health=HealthRegistry(bus=Bus())), port=0, bus=Bus())
    await server.start()
    try:
        with pytest.raises(RuntimeError, match="already started"):
            await server.start()
    finally:
        await server.stop()


@pytest.mark.asyncio
async def test_insecure_server_non_loopback_bind_logs_a_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests bind only 127.0.0.1: the address is judged non-loopback, the socket stays local.
    monkeypatch.setattr("pycm.server.serving.is_loopback", lambda address: False)
    server = InsecureServer(build_routes(health=HealthRegistry(bus=Bus())), port=0, bus=Bus())
    with caplog.at_level("WARNING", logger="pycm.server.serving"):
        await server.start()
    await server.stop()
    assert any("serving insecurely" in r.getMessage() for r in caplog.records)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("address", "shown"),
    [pytest.param("127.0.0.1", "127.0.0.1", id="ipv4"), pytest.param("::1", "[::1]", id="ipv6")],
)
async def test_server_logs_where_it_serves_as_host_port(
    caplog: pytest.LogCaptureFixture, address: str, shown: str
) -> None:
    """An IPv6 address is bracketed, as Go's net.JoinHostPort writes it (it read ::1:10257)."""
    server = InsecureServer(
        build_routes(health=HealthRegistry(bus=Bus())), bind_address=address, port=0, bus=Bus()
    )
    with caplog.at_level("INFO", logger="pycm.server.serving"):
        _, port = await server.start()
    await server.stop()
    assert [
        r.getMessage() for r in caplog.records if "serving insecurely on" in r.getMessage()
    ] == [f"serving insecurely on {shown}:{port}"]


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        pytest.param("127.0.0.1", True, id="ipv4-loopback"),
        pytest.param("127.0.0.2", True, id="ipv4-loopback-net"),
        pytest.param("::1", True, id="ipv6-loopback"),
        pytest.param("localhost", True, id="localhost"),
        pytest.param("0.0.0.0", False, id="ipv4-any"),
        pytest.param("::", False, id="ipv6-any"),
        pytest.param("10.1.2.3", False, id="private"),
        pytest.param("example.com", False, id="hostname"),
    ],
)
def test_is_loopback_address_classified(address: str, loopback: bool) -> None:
    assert is_loopback(address) is loopback


@pytest.mark.asyncio
async def test_secure_server_port_in_use_raises_and_cleans_up(serve: Serve) -> None:
    first = await serve()
    second = SecureServer(
        build_routes(health=HealthRegistry(bus=Bus())),
        SecureServingConfig(bind_address="127.0.0.1", port=first.server.port),
        authenticator=AnonymousAuthenticator(),
        authorizer=AlwaysAllowAuthorizer(),
        bus=Bus(),
    )
    with pytest.raises(OSError):
        await second.start()
    assert not Path(second.cert_file).parent.exists()  # its temp dir went with the failure
    await second.stop()  # stopping a server that never served is a no-op


@pytest.mark.asyncio
async def test_insecure_server_stop_cancelled_leaves_nothing_running() -> None:
    entered = asyncio.Event()

    async def hang(request: Request) -> Response:
        entered.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    app = build_routes(health=HealthRegistry(bus=Bus()), routes=[Route("/hang", hang)])
    server = InsecureServer(app, port=0, shutdown_timeout=30.0, bus=Bus())
    _, port = await server.start()
    async with httpx.AsyncClient(timeout=10.0) as client:
        request = asyncio.ensure_future(client.get(f"http://127.0.0.1:{port}/hang"))
        await entered.wait()
        stopping = asyncio.ensure_future(server.stop())
        await asyncio.sleep(0.2)  # inside uvicorn's graceful wait for the hanging request
        stopping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stopping
        with pytest.raises(httpx.TransportError):
            await request  # the connection was closed under it
    # The leak check fails this test if the serving or the request task is still running.
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_secure_server_stop_closes_connections_still_in_their_tls_handshake(
    serve: Serve,
) -> None:
    # They are not uvicorn's yet, so its shutdown does not close them; left alone they would
    # stay until the 10 s handshake timeout.
    served = await serve()
    host, port = served.server.bound or ("", 0)
    reader, writer = await asyncio.open_connection(host, port)  # TCP, no ClientHello
    try:
        await asyncio.sleep(0.1)  # accepted
        started = time.monotonic()
        await served.server.stop()
        async with asyncio.timeout(2.0):
            assert await reader.read() == b""
        assert time.monotonic() - started < 2.0
    finally:
        writer.transport.abort()
