"""The one redaction rule for secrets in flags and configuration.

Wherever a flag or config value is shown — ``/configz``, the ``flags.parsed`` event (and so the
span made of it), log lines, error messages — it goes through :func:`redact_value`:

1. a **secret-named** setting (:func:`is_secret_name`: a ``-``/``_``/``.``-separated segment
   ``token``, ``password``, ``passwd``, ``secret``, ``credential``, ``key`` after ``api``/
   ``private``, or their plurals — unless it names a path: ``-file``, ``-dir``, ``-path``,
   ``-kubeconfig``) shows :data:`WITHHELD` whatever its value;
2. a **headers** setting (a segment ``header`` or ``headers``, as ``--otlp-headers`` or
   ``OTEL_EXPORTER_OTLP_HEADERS``: ``name=value,name=value``) keeps the header names and
   withholds every value (an ``Authorization`` header is the usual content);
3. any other value has each URL's **userinfo password** replaced by ``xxxxx`` (Go's
   ``url.URL.Redacted``: ``http://user:xxxxx@host``) and the values of secret-named **query
   parameters** (``?access_token=…``) withheld.

Rule 3 also applies to free text (:func:`redact_text`), which the log formatter runs over every
message, so a URL with a password never reaches a log line whoever logged it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "URL_PASSWORD_MASK",
    "WITHHELD",
    "is_headers_name",
    "is_secret_name",
    "redact_mapping",
    "redact_text",
    "redact_url",
    "redact_value",
    "without_userinfo",
]

WITHHELD = "(withheld)"  # what a withheld value shows as
URL_PASSWORD_MASK = "xxxxx"  # Go's url.URL.Redacted mask for a userinfo password

_SECRET_WORDS = frozenset({"token", "password", "passwd", "secret", "credential", "apikey"})
_KEY_QUALIFIERS = frozenset({"api", "private", "access", "secret"})  # "api-key", "private_key"
_HEADER_WORDS = frozenset({"header", "headers"})
_PATH_SUFFIXES = ("file", "dir", "path", "kubeconfig")
_SEPARATORS = re.compile(r"[-_.]")

# scheme://userinfo@ — userinfo is everything up to the last "@" before the authority ends at
# "/", "?" or "#" (a raw "@" in a password is taken as Python's urlsplit takes it); the password
# is what follows its first ":".
_URL_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/?#@\s:]*):[^/?#\s]*@")
# name=value in a query string (after "?" or "&"), up to the next "&", "#" or whitespace.
_QUERY_PARAM = re.compile(r"(?P<lead>[?&])(?P<name>[^=&#\s]+)=(?P<value>[^&#\s]*)")


def _segments(name: str) -> list[str]:
    return [s for s in _SEPARATORS.split(name.lower()) if s]


def is_secret_name(name: str) -> bool:
    """Whether a setting called ``name`` holds a secret (rule 1 of the module)."""
    words = _segments(name)
    if not words or words[-1] in _PATH_SUFFIXES:
        return False
    for i, word in enumerate(words):
        singular = word[:-1] if word.endswith("s") else word
        if word in _SECRET_WORDS or singular in _SECRET_WORDS:
            return True
        if singular == "key" and i > 0 and words[i - 1] in _KEY_QUALIFIERS:
            return True
    return False


def is_headers_name(name: str) -> bool:
    """Whether a setting called ``name`` holds ``name=value`` headers (rule 2)."""
    return any(word in _HEADER_WORDS for word in _segments(name))


def redact_url(url: str) -> str:
    """``url`` (or any text holding URLs) with userinfo passwords masked and secret-named
    query parameters withheld (rule 3)."""
    if "://" not in url and "=" not in url:
        return url
    out = _URL_USERINFO.sub(
        lambda m: f"{m.group('head')}{m.group('user')}:{URL_PASSWORD_MASK}@", url
    )
    if "?" in out:
        out = _QUERY_PARAM.sub(_redact_query_param, out)
    return out


def _redact_query_param(match: re.Match[str]) -> str:
    if not is_secret_name(match.group("name")):
        return match.group()
    return f"{match.group('lead')}{match.group('name')}={WITHHELD}"


def without_userinfo(url: str) -> str:
    """``url`` with its userinfo (``user:password@``) removed, for a transport that takes no
    credentials from the URL."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


redact_text = redact_url  # free text: the same substitutions, wherever a URL appears in it


def _redact_headers(value: str) -> str:
    pairs = []
    for pair in value.split(","):
        name, sep, _ = pair.partition("=")
        pairs.append(f"{name}={WITHHELD}" if sep else (WITHHELD if pair.strip() else pair))
    return ",".join(pairs)


def redact_value(name: str, value: str) -> str:
    """``value`` of the setting ``name`` as it may be shown (the three rules of the module)."""
    if not value:
        return value
    if is_secret_name(name):
        return WITHHELD
    if is_headers_name(name):
        return _redact_headers(value)
    return redact_url(value)


def redact_mapping(value: Any, name: str = "") -> Any:
    """A copy of a JSON-like tree with every string redacted by the name of the key it is under
    (lists take their key's name); what ``/configz`` serves."""
    if isinstance(value, str):
        return redact_value(name, value)
    if isinstance(value, Mapping):
        return {k: redact_mapping(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_mapping(v, name) for v in value]
    return value
