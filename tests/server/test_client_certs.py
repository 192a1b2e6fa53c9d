"""TLS client certificates against --client-ca-file: CN → user, O → groups; others refused."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trustme

from pycm.server import SecureServingConfig
from pycm.server.authentication import AuthenticationError, user_from_certificate
from pycm.server.certs import generate_self_signed
from tests.server.conftest import ClientFor, Serve, bearer


def _client_ca_config(tmp_path: Path, client_ca: trustme.CA) -> SecureServingConfig:
    ca_file = tmp_path / "client-ca.crt"
    client_ca.cert_pem.write_to_path(str(ca_file))
    return SecureServingConfig(bind_address="127.0.0.1", port=0, client_ca_file=str(ca_file))


@pytest.mark.asyncio
async def test_client_cert_signed_by_client_ca_authenticates_cn_and_o(
    serve: Serve, client_for: ClientFor, tmp_path: Path
) -> None:
    client_ca = trustme.CA()
    served = await serve(config=_client_ca_config(tmp_path, client_ca), allowed=("carol",))
    cert = client_ca.issue_cert(common_name="carol", organization_name="ops")
    client = client_for(served.server.cert_file, client_cert=cert)
    response = await client.get(f"{served.url}/metrics")
    assert response.status_code == 200
    [attrs] = served.authorizer.calls
    assert (attrs.user.name, attrs.user.groups) == ("carol", ("ops", "system:authenticated"))


@pytest.mark.asyncio
async def test_client_cert_wins_over_an_invalid_token(
    serve: Serve, client_for: ClientFor, tmp_path: Path
) -> None:
    client_ca = trustme.CA()
    served = await serve(config=_client_ca_config(tmp_path, client_ca), allowed=("carol",))
    cert = client_ca.issue_cert(common_name="carol")
    client = client_for(served.server.cert_file, client_cert=cert)
    response = await client.get(f"{served.url}/metrics", headers=bearer("wrong-token"))
    assert response.status_code == 200
    assert served.reviewer.calls == []


@pytest.mark.asyncio
async def test_client_cert_from_another_ca_fails_the_handshake(
    serve: Serve, client_for: ClientFor, tmp_path: Path
) -> None:
    served = await serve(config=_client_ca_config(tmp_path, trustme.CA()))
    stranger = trustme.CA().issue_cert(common_name="mallory")
    client = client_for(served.server.cert_file, client_cert=stranger)
    with pytest.raises(httpx.TransportError):
        await client.get(f"{served.url}/healthz")
    assert served.authorizer.calls == []


@pytest.mark.asyncio
async def test_client_ca_set_but_no_cert_presented_is_anonymous(
    serve: Serve, client_for: ClientFor, tmp_path: Path
) -> None:
    served = await serve(config=_client_ca_config(tmp_path, trustme.CA()))
    client = client_for(served.server.cert_file)
    assert (await client.get(f"{served.url}/healthz")).status_code == 200
    assert (await client.get(f"{served.url}/metrics")).status_code == 403
    [attrs] = served.authorizer.calls
    assert attrs.user.name == "system:anonymous"


@pytest.mark.asyncio
async def test_client_cert_without_client_ca_file_is_not_asked_for(
    serve: Serve, client_for: ClientFor
) -> None:
    served = await serve(allowed=("carol",))
    cert = trustme.CA().issue_cert(common_name="carol")
    client = client_for(served.server.cert_file, client_cert=cert)
    response = await client.get(f"{served.url}/metrics")
    assert response.status_code == 403  # the certificate was never requested: anonymous
    [attrs] = served.authorizer.calls
    assert attrs.user.name == "system:anonymous"


@pytest.mark.parametrize(
    ("common_name", "organization", "expected"),
    [
        pytest.param("carol", "ops", ("carol", ("ops",)), id="cn-and-o"),
        pytest.param(
            "carol", None, ("carol", (f"trustme v{trustme.__version__}",)), id="trustme-default-o"
        ),
        pytest.param(None, "ops", None, id="no-cn-not-a-user"),
    ],
)
def test_user_from_certificate_maps_cn_and_o(
    common_name: str | None, organization: str | None, expected: tuple[str, tuple[str, ...]] | None
) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("client.example", common_name=common_name, organization_name=organization)
    user = user_from_certificate(cert.cert_chain_pems[0].bytes().decode())
    assert (None if user is None else (user.name, user.groups)) == expected


def test_user_from_certificate_unreadable_pem_is_an_authentication_error() -> None:
    with pytest.raises(AuthenticationError, match="unreadable"):
        user_from_certificate(
            "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"
        )


def test_user_from_certificate_server_only_usage_is_an_authentication_error() -> None:
    chain, _ = generate_self_signed(["localhost"])  # its leaf is for server auth only
    leaf = chain.split(b"-----END CERTIFICATE-----")[0] + b"-----END CERTIFICATE-----\n"
    with pytest.raises(AuthenticationError, match="not for client authentication"):
        user_from_certificate(leaf.decode())
