"""Serving certificates: given files, or a self-signed pair, and the server's SSLContext.

As kube's ``SecureServingOptions.MaybeDefaultWithSelfSignedCerts``: with no
``--tls-cert-file``/``--tls-private-key-file`` a pair is generated for localhost, 127.0.0.1,
::1, the host name and a specific bind address — a throw-away CA and a serving certificate it
signed; the certificate file holds the serving certificate then the CA, so a client can trust
the file itself. With ``--cert-dir`` the pair is written there as ``pycm.crt``/``pycm.key`` and
reused on the next start when both files are already there; without it the pair lives in a
private temporary directory (Python's ``ssl`` loads certificates only from files) that the
caller removes at stop.

Client certificates: with ``--client-ca-file`` the server asks for one (``CERT_OPTIONAL``) and
verifies it against that bundle during the handshake; a certificate that does not verify fails
the handshake (Python's ``ssl`` cannot request a certificate without verifying it, where Go
hands an unverified one to the x509 authenticator for a 401). Without the flag none is asked.
"""

from __future__ import annotations

import datetime
import os
import socket
import ssl
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pycm.util.certs import issue_self_signed

__all__ = [
    "CERT_DIR_CERT",
    "CERT_DIR_KEY",
    "ServingCert",
    "default_hosts",
    "generate_self_signed",
    "load_or_generate",
    "server_ssl_context",
]

CERT_DIR_CERT = "pycm.crt"
CERT_DIR_KEY = "pycm.key"
_VALIDITY = datetime.timedelta(days=365)  # kube's self-signed serving pair lasts a year


@dataclass(frozen=True, slots=True)
class ServingCert:
    """Where the serving pair is. ``source`` is "files" (given) or "self-signed"; ``temp_dir``
    is the private directory to remove at stop (self-signed without --cert-dir)."""

    cert_file: str
    key_file: str
    source: str
    temp_dir: str | None = None


def default_hosts(bind_address: str = "") -> list[str]:
    """The names a self-signed certificate is for: localhost, loopback IPs, the host name,
    and the bind address when it is a specific one."""
    hosts = ["localhost", "127.0.0.1", "::1"]
    name = socket.gethostname()
    if name and name not in hosts:
        hosts.append(name)
    if bind_address and bind_address not in ("0.0.0.0", "::", "") and bind_address not in hosts:
        hosts.append(bind_address)
    return hosts


def generate_self_signed(hosts: Iterable[str]) -> tuple[bytes, bytes]:
    """A serving certificate for ``hosts`` signed by a fresh CA: (cert + CA chain PEM, key PEM)."""
    hosts = list(hosts)
    now = int(datetime.datetime.now(datetime.UTC).timestamp())
    pair = issue_self_signed(hosts, common_name=f"{hosts[0]}@{now}", valid_for=_VALIDITY)
    return pair.cert_pem + pair.ca_pem, pair.key_pem


def _write_pair(directory: Path, chain: bytes, key_pem: bytes) -> tuple[str, str]:
    cert_path, key_path = directory / CERT_DIR_CERT, directory / CERT_DIR_KEY
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key_pem)
    cert_path.write_bytes(chain)
    return str(cert_path), str(key_path)


def load_or_generate(
    *,
    cert_file: str | None,
    key_file: str | None,
    cert_dir: str | None,
    hosts: Iterable[str],
) -> ServingCert:
    """The serving pair to use (blocking file I/O: call it through ``asyncio.to_thread``)."""
    if cert_file or key_file:
        if not (cert_file and key_file):
            raise ValueError("--tls-cert-file and --tls-private-key-file go together")
        return ServingCert(cert_file, key_file, "files")
    if cert_dir:
        directory = Path(cert_dir)
        cert_path, key_path = directory / CERT_DIR_CERT, directory / CERT_DIR_KEY
        if cert_path.is_file() and key_path.is_file():
            return ServingCert(str(cert_path), str(key_path), "self-signed")
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        chain, key_pem = generate_self_signed(hosts)
        return ServingCert(*_write_pair(directory, chain, key_pem), "self-signed")
    temp_dir = tempfile.mkdtemp(prefix="pycm-serving-")  # mode 0700
    chain, key_pem = generate_self_signed(hosts)
    return ServingCert(*_write_pair(Path(temp_dir), chain, key_pem), "self-signed", temp_dir)


def server_ssl_context(
    cert: ServingCert,
    *,
    client_ca_file: str | None = None,
    minimum_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
    ciphers: tuple[str, ...] = (),
) -> ssl.SSLContext:
    """The server's context: the serving pair, TLS ≥ 1.2 (kube's default), HTTP/1.1 by ALPN,
    and client certificates asked for and verified when ``client_ca_file`` is given;
    ``ciphers`` (OpenSSL names, :mod:`pycm.server.tlsnames`) the TLS 1.2 suites allowed."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = minimum_version
    if ciphers:
        try:
            context.set_ciphers(":".join(ciphers))
        except ssl.SSLError:
            raise OSError(
                f"none of the cipher suites {', '.join(ciphers)} is available in this OpenSSL"
            ) from None
    # OpenSSL's own words ("[SSL] PEM lib (_ssl.c:3905)") name no file: say which, and why.
    try:
        context.load_cert_chain(cert.cert_file, cert.key_file)
    except ssl.SSLError as exc:
        why = (
            "the key is not the certificate's"
            if exc.reason == "KEY_VALUES_MISMATCH"
            else "want a PEM certificate (chain) and a PEM private key"
        )
        raise OSError(
            f'cannot load the serving certificate "{cert.cert_file}" and key '
            f'"{cert.key_file}": {why}'
        ) from None
    context.set_alpn_protocols(["http/1.1"])
    if client_ca_file:
        try:
            context.load_verify_locations(cafile=client_ca_file)
        except ssl.SSLError:
            raise OSError(
                f'cannot load the client CA file "{client_ca_file}": no PEM certificate in it'
            ) from None
        context.verify_mode = ssl.CERT_OPTIONAL
    else:
        context.verify_mode = ssl.CERT_NONE
    return context
