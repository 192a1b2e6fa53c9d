"""A throwaway CA and a serving certificate for 127.0.0.1 / localhost (``--tls``)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from pycm.util.certs import issue_self_signed

__all__ = ["ServingCert", "write_serving_cert"]

_VALIDITY = dt.timedelta(days=30)


@dataclass(frozen=True, slots=True)
class ServingCert:
    ca_pem: bytes
    cert_file: Path
    key_file: Path


def write_serving_cert(directory: Path, host: str = "127.0.0.1") -> ServingCert:
    pair = issue_self_signed(
        ["localhost", host, "127.0.0.1"], common_name="pycm-sim", valid_for=_VALIDITY
    )
    cert_file, key_file = directory / "serving.crt", directory / "serving.key"
    cert_file.write_bytes(pair.cert_pem)
    key_file.write_bytes(pair.key_pem)
    key_file.chmod(0o600)
    return ServingCert(pair.ca_pem, cert_file, key_file)
