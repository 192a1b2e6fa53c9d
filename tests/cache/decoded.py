"""What the SharingDecoder makes of an object's managedFields: the newest entry's writer only."""

from __future__ import annotations

from typing import Any


def reduce_managed_fields(meta: dict[str, Any]) -> None:
    """In place: ``managedFields`` reduced to its newest entry's manager, operation and time
    (the later of two in the same second), as the decoder hands them to the informer."""
    entries = meta.pop("managedFields", None)
    if entries:
        newest = max(enumerate(entries), key=lambda e: (e[1].get("time") or "", e[0]))[1]
        meta["managedFields"] = [{k: newest.get(k) or "" for k in ("manager", "operation", "time")}]
