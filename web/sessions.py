"""Dashboard sessions and one-time login codes, both in memory.

A session is what the login cookie names: a random id → the viewer it stands for and when it
ends. It holds no token — the token was checked once at login and forgotten — so a stolen
session store leaks no credential. A login code is the same idea for the printed login URL
(Jupyter-style): a random string good for one exchange, within a short time, for a session.

Both are bounded: past their cap the entry that ends soonest is dropped first, so a flood of
logins cannot grow the process without limit.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from pycm.util.clock import REAL_CLOCK, Clock

__all__ = [
    "DEFAULT_CODE_TTL",
    "DEFAULT_SESSION_TTL",
    "LoginCodes",
    "SessionStore",
    "Viewer",
]

DEFAULT_SESSION_TTL = 8 * 3600.0  # a working day: an incident outlasting it logs in again
DEFAULT_CODE_TTL = 3600.0  # the printed URL is opened soon after start, or not at all
_MAX_ENTRIES = 4096


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking: the user a token review (or the login code's owner) names."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()


class _Expiring:
    """id → (viewer, monotonic end). Invariant: every entry's end is in the future as of its
    last lookup; expired entries are removed when touched or when the cap is reached."""

    def __init__(self, ttl: float, clock: Clock, max_entries: int) -> None:
        self._ttl = ttl
        self._clock = clock
        self._max = max_entries
        self._entries: dict[str, tuple[Viewer, float]] = {}

    def put(self, viewer: Viewer) -> str:
        now = self._clock.monotonic()
        if len(self._entries) >= self._max:
            self._entries = {k: v for k, v in self._entries.items() if v[1] > now}
            while len(self._entries) >= self._max:
                del self._entries[min(self._entries, key=lambda k: self._entries[k][1])]
        key = secrets.token_urlsafe(32)
        self._entries[key] = (viewer, now + self._ttl)
        return key

    def get(self, key: str, *, remove: bool = False) -> Viewer | None:
        entry = self._entries.pop(key, None) if remove else self._entries.get(key)
        if entry is None:
            return None
        viewer, end = entry
        if end <= self._clock.monotonic():
            self._entries.pop(key, None)
            return None
        return viewer

    def discard(self, key: str) -> None:
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


class SessionStore:
    """Session id (the cookie's value) → viewer, until ``ttl`` seconds after login."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_SESSION_TTL,
        clock: Clock = REAL_CLOCK,
        max_sessions: int = _MAX_ENTRIES,
    ) -> None:
        self.ttl = ttl
        self._entries = _Expiring(ttl, clock, max_sessions)

    def create(self, viewer: Viewer) -> str:
        return self._entries.put(viewer)

    def lookup(self, session_id: str) -> Viewer | None:
        return self._entries.get(session_id)

    def end(self, session_id: str) -> None:
        self._entries.discard(session_id)

    def __len__(self) -> int:
        return len(self._entries)


class LoginCodes:
    """One-time login codes: each redeems once, within ``ttl`` seconds, for its viewer."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_CODE_TTL,
        clock: Clock = REAL_CLOCK,
        max_codes: int = _MAX_ENTRIES,
    ) -> None:
        self._entries = _Expiring(ttl, clock, max_codes)

    def new(self, viewer: Viewer) -> str:
        return self._entries.put(viewer)

    def redeem(self, code: str) -> Viewer | None:
        """The code's viewer, and the code is gone; None when unknown, used or expired."""
        return self._entries.get(code, remove=True)
