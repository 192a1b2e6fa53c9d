"""Go's ``encoding/base64`` StdEncoding decoder, for the errors kube-apiserver answers.

A Secret's ``data`` values are ``[]byte`` in Go, so a value that is not base64 fails the
request's decoding with Go's message, ``illegal base64 data at input byte N``, where N is
where Go's decoder stopped: the first byte outside the alphabet, a misplaced ``=``, or the start
of an incomplete final group. Go skips ``\\r`` and ``\\n`` anywhere and, as the standard (not
strict) encoding, ignores non-zero bits after the last full byte; so does this decoder.
"""

from __future__ import annotations

import base64
import binascii

__all__ = ["Base64Error", "decode_std"]

_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = frozenset(b"\r\n")
_PAD = ord("=")


class Base64Error(ValueError):
    """Go's CorruptInputError: ``offset`` is the byte the decoder stopped at."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"illegal base64 data at input byte {offset}")
        self.offset = offset


def _check(src: bytes) -> None:
    """Raise :class:`Base64Error` where Go's decodeQuantum would, quantum by quantum."""
    si, n = 0, len(src)
    while True:
        j = 0
        while j < 4:
            if si == n:
                if j == 0:
                    return
                raise Base64Error(si - j)  # an incomplete group (padding is required)
            c = src[si]
            si += 1
            if c in _ALPHABET:
                j += 1
                continue
            if c in _NEWLINES:
                continue
            if c != _PAD or j < 2:
                raise Base64Error(si - 1)  # not base64, or "=" too early
            if j == 2:  # "==" expected: the first is consumed
                while si < n and src[si] in _NEWLINES:
                    si += 1
                if si == n:
                    raise Base64Error(n)
                if src[si] != _PAD:
                    raise Base64Error(si - 1)
                si += 1
            while si < n and src[si] in _NEWLINES:
                si += 1
            if si < n:
                raise Base64Error(si)  # something after the padding
            return


def decode_std(text: str) -> bytes:
    """The bytes ``text`` encodes, decoded as Go's ``base64.StdEncoding`` decodes them."""
    src = text.encode("utf-8", "surrogatepass")  # Go sees the string's bytes
    _check(src)
    cleaned = src.replace(b"\r", b"").replace(b"\n", b"")
    try:
        return base64.b64decode(cleaned, validate=True)
    except binascii.Error:  # (the check above refuses what this would)
        raise Base64Error(0) from None
