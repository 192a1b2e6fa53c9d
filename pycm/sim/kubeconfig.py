"""The kubeconfig the emulator writes: one cluster, the admin token, namespace ``default``.

It works unchanged with the ``kubernetes`` Python client and with kubectl
(certificate-authority-data inline when serving TLS, the default; kubectl needs TLS, as
client-go puts a kubeconfig's credentials only on TLS connections).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

__all__ = ["CONTEXT", "kubeconfig", "write_kubeconfig"]

CONTEXT = "pycm-sim"


def kubeconfig(server: str, token: str, ca_pem: bytes | None = None) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": "admin", "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
    }


def write_kubeconfig(path: Path, server: str, token: str, ca_pem: bytes | None = None) -> None:
    """Write atomically (a reader never sees half a file), readable by the owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig(server, token, ca_pem), sort_keys=False)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    tmp.replace(path)
