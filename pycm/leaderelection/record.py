"""The LeaderElectionRecord: what a lock stores, and its form as a coordination/v1 Lease spec.

Times are wall-clock (Unix nanoseconds) because the Lease carries them for humans and other
clients; the elector never judges expiry by them (it uses the locally observed time of the last
change, see :mod:`pycm.leaderelection.elector`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["LeaderElectionRecord", "format_micro_time", "parse_micro_time"]


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time_ns: int = 0
    renew_time_ns: int = 0
    leader_transitions: int = 0

    def to_lease_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.leader_transitions,
        }
        if self.acquire_time_ns:
            spec["acquireTime"] = format_micro_time(self.acquire_time_ns)
        if self.renew_time_ns:
            spec["renewTime"] = format_micro_time(self.renew_time_ns)
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
        )

    def raw(self) -> bytes:
        """The canonical bytes compared to notice a change (client-go compares the raw JSON)."""
        return orjson.dumps(self.to_lease_spec(), option=orjson.OPT_SORT_KEYS)


def format_micro_time(wall_ns: int) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC, e.g. 2024-05-01T10:00:00.123456Z."""
    seconds, ns = divmod(wall_ns, 1_000_000_000)
    stamp = dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{ns // 1000:06d}Z"


def parse_micro_time(text: object) -> int:
    """Unix nanoseconds of a MicroTime / Time string; 0 for a missing or unreadable value."""
    if not isinstance(text, str) or not text:
        return 0
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    whole = int(value.replace(microsecond=0).timestamp())
    return whole * 1_000_000_000 + value.microsecond * 1000
