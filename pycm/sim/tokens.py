"""Opaque continue tokens for chunked lists: base64url JSON of (list rv, last namespace, name)."""

from __future__ import annotations

import base64
import binascii

import orjson

from pycm.sim.errors import bad_request

__all__ = ["decode_continue", "encode_continue"]


def encode_continue(rv: int, namespace: str, name: str) -> str:
    raw = orjson.dumps({"v": "sim/1", "rv": rv, "start": [namespace, name]})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode()))
        ns, name = data["start"]
        return int(data["rv"]), str(ns), str(name)
    except (binascii.Error, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise bad_request("continue key is not valid: invalid continue token") from None
