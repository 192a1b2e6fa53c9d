"""Checks the option groups share; each returns an error message, or None when all is well."""

from __future__ import annotations

from collections.abc import Sequence

from pycm.app.options.flagset import go_quote

__all__ = ["one_of", "port_in_range", "readable_file"]


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
