"""The shared self-signed pair: a CA that signed a server-auth leaf for the given names."""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from pycm.util.certs import issue_self_signed


def test_issue_self_signed_names_usage_and_chain() -> None:
    pair = issue_self_signed(
        ["localhost", "127.0.0.1", "localhost"], common_name="x", valid_for=datetime.timedelta(1)
    )
    ca = x509.load_pem_x509_certificate(pair.ca_pem)
    leaf = x509.load_pem_x509_certificate(pair.cert_pem)
    assert leaf.issuer == ca.subject
    leaf.verify_directly_issued_by(ca)
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert leaf.not_valid_after_utc - leaf.not_valid_before_utc <= datetime.timedelta(1, 301)
    assert pair.key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")
