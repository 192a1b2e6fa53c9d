"""The viewers' credentials towards the managers: one set of flags, shared by every viewer command
(``pycm top``, ``pycm dashboard``, ``pycm why``), with the same names, help and validation.

The flags are kubectl's: ``--token`` / ``--token-file``, ``--certificate-authority FILE``,
``--insecure-skip-tls-verify``, ``--client-certificate FILE`` with ``--client-key FILE``;
``--kubeconfig`` (``--context``) supplies whatever of those the flags leave unset, from its
current context (``certificate-authority[-data]``, ``insecure-skip-tls-verify``, the user's
``token`` / ``tokenFile``), as kubectl lets flags override its kubeconfig. The manager's URL
always comes from ``--server``: a kubeconfig names the API server, not the manager. Every
problem is a :class:`CredentialsError` with a one-line message that names the flag; a viewer
command prints it as its one error line and exits 2.
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
    "NO_CREDENTIALS",
    "Credentials",
    "CredentialsError",
    "add_flags",
    "from_flags",
    "from_kubeconfig",
    "read_token_file",
]


NO_CREDENTIALS = (
    "no credentials for the managers: give --token, --token-file FILE, --kubeconfig FILE "
    "or --client-certificate FILE"
)


class CredentialsError(ValueError):
    """A token, CA, certificate or kubeconfig that cannot be used (the message says which and
    why, on one line: a YAML parser's error spans several)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


@dataclass(frozen=True, slots=True)
class Credentials:
    token: str = ""
    token_file: str = ""  # where ``token`` was read: a stream client reads it again on reconnect
    ca_file: str = ""
    ca_data: str = ""  # PEM text
    insecure: bool = False
    client_cert: tuple[str, str] | None = None  # (certificate file, key file)

    def merged(self, fallback: Credentials) -> Credentials:
        """These, with unset fields taken from ``fallback``."""
        own_token = bool(self.token or self.token_file)
        return Credentials(
            token=self.token if own_token else fallback.token,
            token_file=self.token_file if own_token else fallback.token_file,
            ca_file=self.ca_file or ("" if self.ca_data else fallback.ca_file),
            ca_data=self.ca_data or ("" if self.ca_file else fallback.ca_data),
            insecure=self.insecure or fallback.insecure,
            client_cert=self.client_cert or fallback.client_cert,
        )

    def verify(self) -> ssl.SSLContext | bool:
        """The ``verify`` argument of an httpx client (the server's trust only)."""
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

    def tls(self) -> ssl.SSLContext | bool:
        """:meth:`verify` with the client certificate loaded, for a one-shot client."""
        verify = self.verify()
        if self.client_cert is None:
            return verify
        context = verify if isinstance(verify, ssl.SSLContext) else ssl.create_default_context()
        if verify is False:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        try:
            context.load_cert_chain(*self.client_cert)
        except (OSError, ssl.SSLError) as exc:
            raise CredentialsError(f"--client-certificate {self.client_cert[0]}: {exc}") from None
        return context


def add_flags(parser: argparse.ArgumentParser) -> None:
    """kubectl's flags for the managers' token, client certificate and TLS trust, as one
    argument group (read back with :func:`from_flags`): every viewer command's."""
    auth = parser.add_argument_group(
        "authentication and TLS towards the managers (kubectl's flags)"
    )
    auth.add_argument("--token", default="", help="bearer token for the managers")
    auth.add_argument(
        "--token-file",
        default="",
        metavar="FILE",
        help="file holding the bearer token (read again on each reconnect)",
    )
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
        "--client-certificate",
        default="",
        metavar="FILE",
        help="PEM file of a client certificate to authenticate with (with --client-key)",
    )
    auth.add_argument(
        "--client-key", default="", metavar="FILE", help="PEM file of its private key"
    )
    auth.add_argument(
        "--kubeconfig",
        default="",
        metavar="FILE",
        help="take the CA and token from this kubeconfig's current context, where the flags "
        "leave them unset (the manager URL still comes from --server)",
    )
    auth.add_argument("--context", default="", help="the kubeconfig context to use")


def _readable(path: str, flag: str) -> str:
    if not os.path.isfile(path):
        why = "not a file" if os.path.exists(path) else "no such file"
        raise CredentialsError(f"{flag} {path}: {why}")
    if not os.access(path, os.R_OK):
        raise CredentialsError(f"{flag} {path}: not readable")
    return path


def from_flags(args: argparse.Namespace) -> Credentials:
    """The credentials :func:`add_flags`' flags name, checked: the flags first, then the
    kubeconfig. Pairs that exclude each other or go together first, then the files (each must
    be a readable file), then what they hold; at least one way to authenticate."""
    if args.token and args.token_file:
        raise CredentialsError("--token and --token-file are mutually exclusive")
    if args.certificate_authority and args.insecure_skip_tls_verify:
        raise CredentialsError(
            "--certificate-authority and --insecure-skip-tls-verify are mutually exclusive"
        )
    if bool(args.client_certificate) != bool(args.client_key):
        raise CredentialsError("--client-certificate and --client-key go together")
    if not (args.token or args.token_file or args.kubeconfig or args.client_certificate):
        raise CredentialsError(NO_CREDENTIALS)
    for flag in ("--token-file", "--client-certificate", "--client-key", "--kubeconfig"):
        path = getattr(args, flag[2:].replace("-", "_"))
        if path:
            _readable(path, flag)
    ca = args.certificate_authority
    if ca:
        _readable(ca, "--certificate-authority")
        try:
            ssl.create_default_context(cafile=ca)
        except (OSError, ssl.SSLError) as exc:
            raise CredentialsError(f"--certificate-authority {ca}: {exc}") from None
    creds = Credentials(
        token=read_token_file(args.token_file) if args.token_file else args.token,
        token_file=args.token_file,
        ca_file=ca,
        insecure=args.insecure_skip_tls_verify,
        client_cert=(args.client_certificate, args.client_key) if args.client_certificate else None,
    )
    if args.kubeconfig:
        creds = creds.merged(from_kubeconfig(args.kubeconfig, args.context))
    creds.verify()  # a kubeconfig's CA that is no certificate: said now, not at each connect
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
    token_file = ""
    if not token and user.get("tokenFile"):
        token_file = os.path.join(base, str(user["tokenFile"]))  # (an absolute one as it is)
        token = read_token_file(token_file)
    return Credentials(
        token=token,
        token_file=token_file,
        ca_file="" if ca_data else ca_file,
        ca_data=ca_data,
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
    )
