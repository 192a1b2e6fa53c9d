"""What the SharingDecoder makes of an object's managedFields: a listed object's are left out, a
watched object's handed on as their JSON bytes (the writers the informer notes, then drops)."""

from __future__ import annotations

from typing import Any

import orjson


def reduce_managed_fields(meta: dict[str, Any], *, watched: bool = False) -> None:
    """In place: ``managedFields`` as the decoder hands them over (the lines of these tests are
    orjson's, so the raw slice is orjson's encoding of the entries)."""
    entries = meta.pop("managedFields", None)
    if entries is not None and watched:
        meta["managedFields"] = orjson.dumps(entries)
