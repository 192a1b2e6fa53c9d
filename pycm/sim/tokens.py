"""Opaque continue tokens for chunked lists: base64url JSON of (list rv, last namespace, name)."""

from __future__ import annotations

import base64
import binascii

import orjson

from pycm.sim.errors import bad_request

__all__ = ["decode_continue", "encode_continue"]

_MAX_RV = 2**63 - 1  # what orjson (and etcd's int64 revisions) can carry


def encode_continue(rv: int, namespace: str, name: str) -> str:
    raw = orjson.dumps({"v": "sim/1", "rv": rv, "start": [namespace, name]})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str, str]:
    """(rv, namespace, name) of a token this emulator issued; 400 for anything else — not
    base64 JSON, the wrong fields, or an rv outside 1..2^63-1 (an rv no list can have had)."""
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode()))
        ns, name = data["start"]
        rv = data["rv"]
    except (binascii.Error, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise bad_request("continue key is not valid: invalid continue token") from None
    if type(rv) is not int or not 0 < rv <= _MAX_RV or not isinstance(ns, str):
        raise bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion "
            "(version meta.k8s.io/v1)"
        )
    if not isinstance(name, str):
        raise bad_request("continue key is not valid: invalid continue token")
    return rv, ns, name
