"""The LeaderElectionRecord: what a lock stores, and its form as a coordination/v1 Lease spec.

Times are wall-clock (Unix nanoseconds) because the Lease carries them for humans and other
clients; the elector never judges expiry by them (it uses the locally observed time of the last
change, see :mod:`pycm.leaderelection.elector`).

An unset time is 0 here. On the wire it is JSON ``null`` (a nil ``*MicroTime``), never a
string: kube-apiserver refuses a year-1 string such as ``1-01-01T00:00:00.000000Z``. Read
back, ``null``, an absent field and Go's zero time (``0001-01-01T00:00:00Z``, with or without
fractional digits, as a Go client that marshals a zero ``MicroTime`` writes it) are all unset,
so a record means the same thing whichever of those its writer used, and :meth:`raw` — what the
elector compares to notice a change — is the same for all of them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["UNSET_WHEN_EMPTY", "LeaderElectionRecord", "format_micro_time", "parse_micro_time"]

UNSET_WHEN_EMPTY = ("strategy", "preferredHolder")
"""Lease spec fields a record leaves out when empty: a write of it unsets them (client-go
replaces the whole spec)."""


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """client-go's LeaderElectionRecord; ``*_time_ns`` are Unix nanoseconds, 0 when unset."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time_ns: int = 0
    renew_time_ns: int = 0
    leader_transitions: int = 0
    # Coordinated leader election (KEP-4355), written by the API server's coordinator: the
    # strategy it elects by and the candidate it wants to lead next ("" when unset).
    strategy: str = ""
    preferred_holder: str = ""

    def to_lease_spec(self) -> dict[str, Any]:
        # Unset times are written as null, not left out: the lock merges this spec over the
        # one it read, and a left-out field would keep whatever the previous writer put there.
        # strategy and preferredHolder appear only when set (client-go's
        # LeaderElectionRecordToLeaseSpec); the lock drops them otherwise (UNSET_WHEN_EMPTY).
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": format_micro_time(self.acquire_time_ns),
            "renewTime": format_micro_time(self.renew_time_ns),
            "leaseTransitions": self.leader_transitions,
        }
        if self.strategy:
            spec["strategy"] = self.strategy
        if self.preferred_holder:
            spec["preferredHolder"] = self.preferred_holder
        return spec

    @classmethod
    def from_lease_spec(cls, spec: dict[str, Any] | None) -> LeaderElectionRecord:
        spec = spec or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time_ns=parse_micro_time(spec.get("acquireTime")),
            renew_time_ns=parse_micro_time(spec.get("renewTime")),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
            strategy=str(spec.get("strategy") or ""),
            preferred_holder=str(spec.get("preferredHolder") or ""),
        )

    def raw(self) -> bytes:
        """The canonical bytes compared to notice a change (client-go compares the raw JSON)."""
        return orjson.dumps(self.to_lease_spec(), option=orjson.OPT_SORT_KEYS)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# Go's zero time.Time, 0001-01-01T00:00:00Z, in Unix nanoseconds: it and anything before it
# (which no Go client can mean as a lease time) read as unset.
_GO_ZERO_NS = -62_135_596_800 * 1_000_000_000


def format_micro_time(wall_ns: int) -> str | None:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC, e.g. 2024-05-01T10:00:00.123456Z;
    None (JSON null) for an unset time (0, or at or before Go's zero time)."""
    if wall_ns == 0 or wall_ns <= _GO_ZERO_NS:
        return None
    seconds, ns = divmod(wall_ns, 1_000_000_000)
    stamp = _EPOCH + dt.timedelta(seconds=seconds)
    # Four-digit years always (strftime's %Y drops leading zeros on some platforms).
    return (
        f"{stamp.year:04d}-{stamp.month:02d}-{stamp.day:02d}T"
        f"{stamp.hour:02d}:{stamp.minute:02d}:{stamp.second:02d}.{ns // 1000:06d}Z"
    )


def parse_micro_time(text: object) -> int:
    """Unix nanoseconds of a MicroTime / Time string; 0 (unset) for null, a missing or
    unreadable value, and Go's zero time."""
    if not isinstance(text, str) or not text:
        return 0
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    delta = value - _EPOCH
    wall_ns = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    return 0 if wall_ns <= _GO_ZERO_NS else wall_ns
