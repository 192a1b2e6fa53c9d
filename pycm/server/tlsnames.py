"""Go's TLS names, as KCM's --tls-min-version and --tls-cipher-suites take them, in Python's
``ssl`` terms (component-base's ``cliflag.TLSVersion`` / ``cliflag.TLSCipherSuites``).

Versions: ``VersionTLS10`` … ``VersionTLS13``; "" is Go's server default, TLS 1.2. Cipher
suites: Go's IANA names (its secure and insecure lists, and k8s' two legacy CHACHA20 aliases),
mapped to OpenSSL's names for ``SSLContext.set_ciphers``. TLS 1.3 suites are accepted and, as
in Go, change nothing: neither Go nor Python's ``ssl`` lets them be chosen.
"""

from __future__ import annotations

import ssl
from typing import Final

__all__ = ["TLS_VERSIONS", "cipher_suites", "tls_version"]

TLS_VERSIONS: Final = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
_TLS13: Final = frozenset(
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
)
_OPENSSL: Final = {
    # Go's tls.CipherSuites() (TLS 1.0-1.2 part)
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    # the legacy names k8s still accepts
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    # Go's tls.InsecureCipherSuites()
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
}


def tls_version(name: str) -> ssl.TLSVersion:
    """The minimum version ``name`` gives ("" → TLS 1.2); ValueError with cliflag's words."""
    if not name:
        return ssl.TLSVersion.TLSv1_2
    version = TLS_VERSIONS.get(name)
    if version is None:
        raise ValueError(f'unknown tls version "{name}"')
    return version


def cipher_suites(names: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """OpenSSL's names for Go's (TLS 1.3 ones dropped: not choosable); ValueError with
    cliflag's words for one Go does not have."""
    out = []
    for name in names:
        if name in _TLS13:
            continue
        openssl = _OPENSSL.get(name)
        if openssl is None:
            raise ValueError(f"Cipher suite {name} not supported or doesn't exist")
        if openssl not in out:
            out.append(openssl)
    return tuple(out)
