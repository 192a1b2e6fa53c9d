"""TLS trust and the bearer token for a :class:`~pycm.trace.stream.StreamClient`, from flags or a
kubeconfig: shared by ``pycm top`` and ``pycm dashboard``.

The flags are kubectl's: ``--token`` / ``--token-file``, ``--certificate-authority FILE``,
``--insecure-skip-tls-verify``; ``--kubeconfig`` supplies whatever of those the flags leave
unset, from its current context (``certificate-authority[-data]``, ``insecure-skip-tls-verify``,
the user's ``token`` / ``tokenFile``). The manager's URL always comes from ``--server``: a
kubeconfig names the API server, not the manager. Every problem is a :class:`CredentialsError`
with a one-line message.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os
import ssl
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "Credentials",
    "CredentialsError",
    "add_flags",
    "from_flags",
    "from_kubeconfig",
    "read_token_file",
]


class CredentialsError(ValueError):
    """A token, CA or kubeconfig that cannot be used (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class Credentials:
    token: str = ""
    ca_file: str = ""
    ca_data: str = ""  # PEM text
    insecure: bool = False

    def merged(self, fallback: Credentials) -> Credentials:
        """These, with unset fields taken from ``fallback``."""
        return Credentials(
            token=self.token or fallback.token,
            ca_file=self.ca_file or ("" if self.ca_data else fallback.ca_file),
            ca_data=self.ca_data or ("" if self.ca_file else fallback.ca_data),
            insecure=self.insecure or fallback.insecure,
        )

    def verify(self) -> ssl.SSLContext | bool:
        """The ``verify`` argument of an httpx client."""
        if self.insecure:
            return False
        try:
            if self.ca_file:
                return ssl.create_default_context(cafile=self.ca_file)
            if self.ca_data:
                return ssl.create_default_context(cadata=self.ca_data)
        except (OSError, ssl.SSLError) as exc:
            raise CredentialsError(f"certificate authority: {exc}") from None
        return True


def add_flags(parser: argparse.ArgumentParser) -> None:
    """kubectl's flags for the managers' token and TLS trust, as one argument group (read
    back with :func:`from_flags`): ``pycm top``'s and ``pycm why``'s."""
    auth = parser.add_argument_group("authentication and TLS (kubectl's flags)")
    auth.add_argument("--token", default="", help="bearer token for the managers")
    auth.add_argument("--token-file", default="", help="file holding the bearer token")
    auth.add_argument(
        "--certificate-authority",
        default="",
        metavar="FILE",
        help="PEM file of the CA that signed the managers' serving certificates",
    )
    auth.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="do not verify the managers' certificates (self-signed demo certs)",
    )
    auth.add_argument(
        "--kubeconfig",
        default="",
        help="take the CA and token from this kubeconfig's current context "
        "(the manager URL still comes from --server)",
    )
    auth.add_argument("--context", default="", help="the kubeconfig context to use")


def from_flags(args: argparse.Namespace) -> Credentials:
    """The credentials :func:`add_flags`' flags name: the flags first, then the kubeconfig."""
    if args.token and args.token_file:
        raise CredentialsError("--token and --token-file are mutually exclusive")
    token = read_token_file(args.token_file) if args.token_file else args.token
    creds = Credentials(
        token=token, ca_file=args.certificate_authority, insecure=args.insecure_skip_tls_verify
    )
    if args.kubeconfig:
        creds = creds.merged(from_kubeconfig(args.kubeconfig, args.context))
    return creds


def read_token_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as exc:
        raise CredentialsError(f"token file {path}: {exc.strerror or exc}") from None
    if not token:
        raise CredentialsError(f"token file {path} is empty")
    return token


def _named(items: Any, name: str, section: str) -> dict[str, Any]:
    for item in items or ():
        if isinstance(item, dict) and item.get("name") == name:
            value = item.get(section)
            return value if isinstance(value, dict) else {}
    raise CredentialsError(f"kubeconfig: no {section} named {name!r}")


def from_kubeconfig(path: str, context: str = "") -> Credentials:
    """The CA, TLS setting and token of ``path``'s current (or the named) context."""
    try:
        with open(path, encoding="utf-8") as f:
            config = yaml.safe_load(f)
    except OSError as exc:
        raise CredentialsError(f"kubeconfig {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise CredentialsError(f"kubeconfig {path}: not YAML: {exc}") from None
    if not isinstance(config, dict):
        raise CredentialsError(f"kubeconfig {path}: not a kubeconfig")
    name = context or config.get("current-context") or ""
    if not name:
        raise CredentialsError(f"kubeconfig {path}: no current-context")
    ctx = _named(config.get("contexts"), name, "context")
    cluster = _named(config.get("clusters"), str(ctx.get("cluster", "")), "cluster")
    user = _named(config.get("users"), str(ctx.get("user", "")), "user") if ctx.get("user") else {}
    base = os.path.dirname(os.path.abspath(path))
    ca_data = ""
    if cluster.get("certificate-authority-data"):
        try:
            ca_data = base64.b64decode(cluster["certificate-authority-data"]).decode()
        except (binascii.Error, UnicodeDecodeError, TypeError) as exc:
            raise CredentialsError(
                f"kubeconfig {path}: certificate-authority-data: {exc}"
            ) from None
    ca_file = str(cluster.get("certificate-authority") or "")
    if ca_file and not os.path.isabs(ca_file):
        ca_file = os.path.join(base, ca_file)
    token = str(user.get("token") or "")
    if not token and user.get("tokenFile"):
        token_file = str(user["tokenFile"])
        token = read_token_file(
            token_file if os.path.isabs(token_file) else os.path.join(base, token_file)
        )
    return Credentials(
        token=token,
        ca_file="" if ca_data else ca_file,
        ca_data=ca_data,
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
    )
