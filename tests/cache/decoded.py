"""What the SharingDecoder makes of an object's managedFields: each entry's writer only."""

from __future__ import annotations

from typing import Any


def reduce_managed_fields(meta: dict[str, Any]) -> None:
    """In place: each ``managedFields`` entry reduced to its manager, operation, time and
    subresource (the writers the informer notes), as the decoder hands them over."""
    entries = meta.pop("managedFields", None)
    if entries:
        out = []
        for e in entries:
            entry = {k: e.get(k) or "" for k in ("manager", "operation", "time")}
            if e.get("subresource"):
                entry["subresource"] = e["subresource"]
            out.append(entry)
        meta["managedFields"] = out
