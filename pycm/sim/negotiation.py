"""Content negotiation: which representation a GET asks for in its Accept header.

kubectl sends a list (``application/json;as=Table;v=v1;g=meta.k8s.io,application/json``); the
first acceptable entry wins: a ``meta.k8s.io`` Table (v1 or v1beta1), PartialObjectMetadata
(List), or plain JSON (``application/json``, ``application/*``, ``*/*``). Protobuf is not
served, so a client that lists it first falls through to its next entry.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pycm.sim.errors import APIError

__all__ = ["JSON", "METADATA", "TABLE", "Output", "negotiate"]

JSON = "json"
TABLE = "table"
METADATA = "metadata"


@dataclass(frozen=True, slots=True)
class Output:
    mode: str
    api_version: str = "meta.k8s.io/v1"  # for Table and PartialObjectMetadata


def _params(entry: str) -> tuple[str, dict[str, str]]:
    media, *rest = (p.strip() for p in entry.split(";"))
    params = {}
    for item in rest:
        key, _, value = item.partition("=")
        params[key.strip().lower()] = value.strip()
    return media.lower(), params


_JSON_OUTPUT = Output(JSON)


def negotiate(accept: str | None) -> Output:
    if not accept or not accept.strip():
        return _JSON_OUTPUT
    return _negotiated(accept)


# Clients send one Accept header again and again (kubectl's, client-go's, the informers'): its
# answer is kept instead of parsing the list each time. Bounded, so distinct hostile headers
# cost at most this many entries.
@functools.lru_cache(maxsize=64)
def _negotiated(accept: str) -> Output:
    for entry in accept.split(","):
        media, params = _params(entry)
        if media not in ("application/json", "application/*", "*/*"):
            continue
        wanted = params.get("as")
        if wanted is None:
            return Output(JSON)
        if params.get("g") != "meta.k8s.io" or params.get("v") not in ("v1", "v1beta1"):
            continue
        version = f"meta.k8s.io/{params['v']}"
        if wanted == "Table":
            return Output(TABLE, version)
        if wanted in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            return Output(METADATA, version)
    raise APIError(
        406,
        "NotAcceptable",
        f"only the following media types are accepted: "
        f"application/json, application/yaml (asked for {accept!r})",
    )
