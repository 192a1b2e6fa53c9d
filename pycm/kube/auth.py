"""The Authorization header for each request, with rotated credentials picked up.

A token file is re-read at most once per :data:`TOKEN_REFRESH_PERIOD` (client-go's cached
file token source re-reads it every minute), and an exec plugin's refresh hook is called at
most that often; both blocking reads run in a thread. A 401 from the server drops the cached
value, so the next request reads the file (or calls the hook) at once — client-go's resettable
token source, which is how a rotated-and-revoked bound service-account token is picked up
without waiting out the minute. A read that fails keeps the last good token (the file may be
mid-rotation), and only fails the request when there never was one.
A :class:`~pycm.kube.config.TokenSource` (service-account credentials) is asked on every
request; it caches and refreshes by itself.
"""

from __future__ import annotations

import asyncio

from pycm.kube.config import ClientConfig, ConfigError
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["TOKEN_REFRESH_PERIOD", "Authenticator"]

TOKEN_REFRESH_PERIOD = 60.0


def _read_token(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


class Authenticator:
    """Invariant: ``_header`` is the value last read and ``_read_at`` its clock time
    (None before the first read)."""

    def __init__(self, config: ClientConfig, clock: Clock = REAL_CLOCK) -> None:
        self._config = config
        self._clock = clock
        self._header: str | None = f"Bearer {config.token}" if config.token else None
        self._read_at: float | None = None
        self._dynamic = bool(config.token_file or config.auth_refresh)

    async def header(self) -> str | None:
        """The Authorization header value, or None when the config has no credentials."""
        source = self._config.token_source
        if source is not None:
            return f"Bearer {await source.token()}"
        if not self._dynamic:
            return self._header
        now = self._clock.monotonic()
        if self._read_at is not None and now - self._read_at < TOKEN_REFRESH_PERIOD:
            return self._header
        try:
            self._header = await asyncio.to_thread(self._load)
        except (OSError, ConfigError) as e:
            if self._header is None:
                raise ConfigError(f"cannot read the client's token: {e}") from None
        self._read_at = now
        return self._header

    def unauthorized(self) -> None:
        """The server answered 401: the cached token (a token source's, or the one last read
        from the file or the exec hook) is dropped so the next request fetches a fresh one; a
        static token is what it is."""
        if self._config.token_source is not None:
            self._config.token_source.reset()
        self._read_at = None

    def _load(self) -> str | None:
        if self._config.token_file:
            token = _read_token(self._config.token_file)
            if not token:
                raise ConfigError(f"token file {self._config.token_file} is empty")
            return f"Bearer {token}"
        assert self._config.auth_refresh is not None
        value = self._config.auth_refresh()
        if value and not value.lower().startswith(("bearer ", "basic ")):
            return f"Bearer {value}"
        return value
