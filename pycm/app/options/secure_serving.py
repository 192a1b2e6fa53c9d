"""Secure serving options: the HTTPS endpoint for /healthz, /readyz, /livez and /metrics.

The connection limits (--max-connections, --tls-handshake-timeout, --request-head-timeout,
--idle-connection-timeout) hold for the secure port and for --port alike
(:mod:`pycm.util.serving_limits`).

With neither --tls-cert-file nor --tls-private-key-file, start-up makes a self-signed pair in
memory (KCM's behaviour); given, both must be given and readable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pycm.app.config import Config, SecureServingConfig
from pycm.app.options.checks import port_in_range, readable_file
from pycm.app.options.flagset import DURATION, INT, IP, STRING, STRINGS, FlagSet
from pycm.server.tlsnames import TLS_VERSIONS, cipher_suites, tls_version

__all__ = ["SecureServingOptions"]

_D = SecureServingConfig()


@dataclass
class SecureServingOptions:
    bind_address: str = _D.bind_address
    port: int = _D.port
    cert_dir: str = _D.cert_dir
    tls_cert_file: str = _D.tls_cert_file
    tls_private_key_file: str = _D.tls_private_key_file
    max_connections: int = _D.max_connections
    tls_handshake_timeout: float = _D.tls_handshake_timeout
    request_head_timeout: float = _D.request_head_timeout
    idle_connection_timeout: float = _D.idle_connection_timeout
    tls_min_version: str = _D.tls_min_version
    tls_cipher_suites: list[str] = field(default_factory=lambda: list(_D.tls_cipher_suites))

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "bind_address",
            "bind-address",
            IP,
            "The address to listen on for --secure-port (0.0.0.0 or :: for every interface).",
        )
        fs.add(
            self,
            "port",
            "secure-port",
            INT,
            "The HTTPS port for health checks and metrics; 0 turns secure serving off.",
        )
        fs.add(
            self,
            "cert_dir",
            "cert-dir",
            STRING,
            "A directory for the serving certificate pair; ignored when --tls-cert-file and "
            "--tls-private-key-file are given.",
        )
        fs.add(
            self,
            "tls_cert_file",
            "tls-cert-file",
            STRING,
            "The serving certificate (PEM, the chain after it). Without it and "
            "--tls-private-key-file a self-signed pair is made for localhost.",
        )
        fs.add(
            self,
            "tls_private_key_file",
            "tls-private-key-file",
            STRING,
            "The private key (PEM) of --tls-cert-file.",
        )
        fs.add(
            self,
            "max_connections",
            "max-connections",
            INT,
            "The most connections the secure port (and --port, each) holds open; more are "
            "closed as they arrive. 0 means no cap. Lowered to fit the open-files limit.",
        )
        fs.add(
            self,
            "tls_handshake_timeout",
            "tls-handshake-timeout",
            DURATION,
            "How long a client may take to complete the TLS handshake. 0 means asyncio's 60s.",
        )
        fs.add(
            self,
            "request_head_timeout",
            "request-head-timeout",
            DURATION,
            "How long a client may take to send a request's head (its line and headers), from the "
            "connection being ready or the first byte of the request; then the connection is "
            "closed. 0 means no limit.",
        )
        fs.add(
            self,
            "idle_connection_timeout",
            "idle-connection-timeout",
            DURATION,
            "How long an idle keep-alive connection stays open (whole seconds, rounded up). "
            "0 means no limit.",
        )

        fs.add(
            self,
            "tls_min_version",
            "tls-min-version",
            STRING,
            "Minimum TLS version supported. Possible values: "
            + ", ".join(TLS_VERSIONS)
            + " (empty: VersionTLS12).",
        )
        fs.add(
            self,
            "tls_cipher_suites",
            "tls-cipher-suites",
            STRINGS,
            "Comma-separated list of cipher suites for the server, Go's names "
            "(TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...). If omitted, the default OpenSSL cipher "
            "suites will be used. TLS 1.3 suites are accepted and, as in Go, not choosable.",
        )

    def validate(self) -> list[str]:
        errors = [port_in_range("secure-port", self.port)]
        try:
            tls_version(self.tls_min_version)
        except ValueError as err:
            errors.append(f"--tls-min-version: {err}")
        try:
            cipher_suites(self.tls_cipher_suites)
        except ValueError as err:
            errors.append(f"--tls-cipher-suites: {err}")
        if self.tls_cipher_suites and self.tls_min_version == "VersionTLS13":
            errors.append(
                "cipher suites may not be specified when --tls-min-version is 'VersionTLS13'"
            )
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            errors.append("--tls-cert-file and --tls-private-key-file must be given together")
        errors.append(readable_file("tls-cert-file", self.tls_cert_file))
        errors.append(readable_file("tls-private-key-file", self.tls_private_key_file))
        if self.max_connections < 0:
            errors.append(f"--max-connections must not be negative, got {self.max_connections}")
        return [e for e in errors if e]

    def apply_to(self, config: Config) -> None:
        config.secure_serving = SecureServingConfig(
            bind_address=self.bind_address,
            port=self.port,
            cert_dir=self.cert_dir,
            tls_cert_file=self.tls_cert_file,
            tls_private_key_file=self.tls_private_key_file,
            max_connections=self.max_connections,
            tls_handshake_timeout=self.tls_handshake_timeout,
            request_head_timeout=self.request_head_timeout,
            idle_connection_timeout=self.idle_connection_timeout,
            tls_min_version=self.tls_min_version,
            tls_cipher_suites=tuple(self.tls_cipher_suites),
        )
