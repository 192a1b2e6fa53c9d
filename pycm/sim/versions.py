"""resourceVersion query parameters, parsed as kube-apiserver parses them.

A resourceVersion is an unsigned 64-bit decimal (``strconv.ParseUint(v, 10, 64)`` in apiserver's
versioner): ``-5``, ``zzz``, ``1e3`` or a number past 2^64 are a 400 BadRequest Status naming the
parameter, never accepted and never a 500. "" means unset.
"""

from __future__ import annotations

from pycm.sim import errors

__all__ = ["MAX_RESOURCE_VERSION", "parse_resource_version"]

MAX_RESOURCE_VERSION = 2**64 - 1


def parse_resource_version(value: str | None, param: str = "resourceVersion") -> int | None:
    """The version ``value`` names; None when unset; 400 when it is not one."""
    if value is None or value == "":
        return None
    if not (value.isascii() and value.isdigit()) or int(value) > MAX_RESOURCE_VERSION:
        shown = value if len(value) <= 64 else value[:64] + "…"
        raise errors.bad_request(
            f'{param}: Invalid value: "{shown}": invalid resource version: want an unsigned '
            "64-bit integer"
        )
    return int(value)
