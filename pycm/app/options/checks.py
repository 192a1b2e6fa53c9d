"""Checks the option groups share; each returns an error message, or None when all is well."""

from __future__ import annotations

import os
from collections.abc import Sequence

from pycm.app.options.flagset import go_quote
from pycm.kube.config import ConfigError, check_kubeconfig_file
from pycm.otel.settings import endpoint_problem
from pycm.util.redact import redact_url

__all__ = [
    "kubeconfig_file",
    "one_of",
    "otlp_endpoint",
    "port_in_range",
    "readable_file",
    "writable_file",
]


def readable_file(flag: str, path: str) -> str | None:
    """A path flag's file must exist and be readable now (start-up reads it later)."""
    if not path:
        return None
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        return f"--{flag} {go_quote(path)}: cannot read: {err.strerror or err}"
    return None


def port_in_range(flag: str, port: int) -> str | None:
    if not 0 <= port <= 65535:
        return f"--{flag} {port} must be between 0 and 65535, inclusive (0 disables)"
    return None


def one_of(flag: str, value: str, choices: Sequence[str]) -> str | None:
    if value not in choices:
        allowed = ", ".join(go_quote(c) for c in choices)
        return f"--{flag} {go_quote(value)} is not supported: want one of {allowed}"
    return None


def kubeconfig_file(flag: str, path: str) -> str | None:
    """A kubeconfig flag's file must be readable and shaped as a kubeconfig now: a garbage or
    wrong-shaped file is a usage error (exit 2), not a start-up failure."""
    error = readable_file(flag, path)
    if error or not path:
        return error
    try:
        check_kubeconfig_file(path)
    except ConfigError as err:
        return f"--{flag} {go_quote(path)}: {err}"
    return None


def writable_file(flag: str, path: str) -> str | None:
    """A file the manager will append to: not a directory, and creatable or writable — its
    parent (made on demand) must be a directory, not a file. Checked by opening it for append,
    which creates the empty file the writer would create moments later anyway."""
    if not path:
        return None
    if os.path.isdir(path):
        return f"--{flag} {go_quote(path)}: is a directory"
    ancestor = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        return f"--{flag} {go_quote(path)}: {go_quote(ancestor)} is not a directory"
    if ancestor != os.path.dirname(os.path.abspath(path)):
        # The writer makes the missing directories; they can be made only where one can write.
        if not os.access(ancestor, os.W_OK | os.X_OK):
            return f"--{flag} {go_quote(path)}: cannot create directories in {go_quote(ancestor)}"
        return None
    try:
        with open(path, "ab"):
            pass
    except OSError as err:
        return f"--{flag} {go_quote(path)}: cannot write: {err.strerror or err}"
    return None


def otlp_endpoint(flag: str, value: str) -> str | None:
    """An OTLP endpoint (pycm.otel.settings.endpoint_problem says what is one). The value is
    shown redacted (it may carry a password)."""
    if not value:
        return None
    problem = endpoint_problem(value)
    return f"--{flag} {go_quote(redact_url(value))}: {problem}" if problem else None
