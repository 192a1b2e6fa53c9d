"""A list or watch's query options, decoded and validated as kube-apiserver does.

kube's ``ListResource`` handler, in order — and so here, so a request with several faults gets
the same first answer:

1. **Decode** (``ParameterCodec.DecodeParameters``; 400 BadRequest with the decoder's error):
   ``timeoutSeconds`` and ``limit`` are Go int64s (``strconv.ParseInt: parsing "1e20": invalid
   syntax`` — an empty value too), then the label and field selectors parse
   (:mod:`pycm.sim.selectors`). Booleans (``watch``, ``allowWatchBookmarks``,
   ``sendInitialEvents``) never fail: only "0" and "false" are false.
2. **Validate** (``ValidateListOptions``; 422 Invalid ``ListOptions.meta.k8s.io ""`` with every
   cause): a list's ``resourceVersionMatch`` needs a ``resourceVersion``, is not allowed with
   ``continue``, is ``Exact`` or ``NotOlderThan``, and ``Exact`` is not allowed for "0"; a
   list takes no ``sendInitialEvents``. A watch takes ``resourceVersionMatch`` (only
   ``NotOlderThan``) only with ``sendInitialEvents``, and ``sendInitialEvents`` only with
   ``NotOlderThan`` and the WatchList feature gate — on by default, as in kube 1.34+
   (:mod:`pycm.sim.watchlist` streams the initial events); off (``--feature-gates
   WatchList=false``), the watch is refused and client-go's reflector falls back to list and
   watch on that answer, as against such a server.
3. **Field labels** the kind does not support (400, in :mod:`pycm.sim.selectors`).

``shardSelector`` (KEP-5866, :mod:`pycm.sim.shardselector`) is parsed with the other selectors —
kube converts it while decoding the parameters, before any feature gate is read — so one that
does not parse is a 400 ``invalid shard selector: …`` whatever the gate. Only with the
``ShardedListAndWatch`` gate on (``sharded``; off by default, alpha in kube 1.36) does it select:
off, kube's storage ignores it, and so does the emulator (the full collection, no
``metadata.shardInfo``), the answer a client gets from a server without the feature.

Then the storage's checks: the ``resourceVersion`` (:mod:`pycm.sim.versions`), and a
``continue`` token (:mod:`pycm.sim.tokens`), which takes no ``resourceVersion`` but "0" (400
``specifying resource version is not allowed when using continue``, etcd3's ``GetList``).

``timeoutSeconds`` bounds a watch as kube's does: ``time.Duration(seconds) * time.Second``, so
a negative value (or one whose nanoseconds wrap past int64, as Go's multiplication does) ends
the watch at once, and 0 or none means no timeout of the client's. kube then picks one between
``--min-request-timeout`` and twice it (30 to 60 minutes); the emulator keeps the watch open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pycm.sim import errors
from pycm.sim.errors import Cause
from pycm.sim.gostrconv import parse_bool, parse_int64, quote
from pycm.sim.resources import Resource
from pycm.sim.selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from pycm.sim.shardselector import ShardSelector, parse_shard_selector

__all__ = ["ListOptions", "list_options", "watch_timeout"]

EXACT: Final = "Exact"
NOT_OLDER_THAN: Final = "NotOlderThan"


@dataclass(frozen=True, slots=True)
class ListOptions:
    """What a list or watch asked for, decoded and valid."""

    labels: LabelSelector
    fields: FieldSelector
    resource_version: str = ""
    resource_version_match: str = ""
    timeout_seconds: int | None = None
    limit: int = 0  # 0 or less: no limit (kube's)
    continue_token: str = ""
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None  # None: not given
    # The shardSelector that applies: None without one, or with the ShardedListAndWatch gate off.
    shards: ShardSelector | None = None


def _int64(query: dict[str, str], key: str) -> int | None:
    value = query.get(key)
    if value is None:
        return None
    try:
        return parse_int64(value)
    except ValueError as err:
        raise errors.bad_request(str(err)) from None


def _forbidden(field: str, why: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {why}", "field": field}


def _not_supported(field: str, value: str, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(quote(s) for s in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {quote(value)}: supported values: {listed}",
        "field": field,
    }


def _validate(
    watch: bool,
    rv: str,
    match: str,
    continue_token: str,
    send_initial: bool | None,
    watch_list: bool,
) -> list[Cause]:
    """kube's ValidateListOptions (``watch_list``: the WatchList gate), every cause in order."""
    causes: list[Cause] = []
    field = "resourceVersionMatch"
    if watch:
        if send_initial is not None:
            if match != NOT_OLDER_THAN:
                causes.append(
                    _forbidden(
                        field, f"sendInitialEvents requires setting {field} to {NOT_OLDER_THAN}"
                    )
                )
            if not watch_list:
                causes.append(
                    _forbidden(
                        "sendInitialEvents",
                        "sendInitialEvents is forbidden for watch unless the WatchList feature "
                        "gate is enabled",
                    )
                )
        if match:
            if send_initial is None:
                why = f"{field} is forbidden for watch unless sendInitialEvents is provided"
                causes.append(_forbidden(field, why))
            if match != NOT_OLDER_THAN:
                causes.append(_not_supported(field, match, (NOT_OLDER_THAN,)))
            if continue_token:
                causes.append(_forbidden(field, f"{field} is forbidden when continue is provided"))
        return causes
    if match:
        if not rv:
            causes.append(
                _forbidden(field, f"{field} is forbidden unless resourceVersion is provided")
            )
        if continue_token:
            causes.append(_forbidden(field, f"{field} is forbidden when continue is provided"))
        if match not in (EXACT, NOT_OLDER_THAN):
            causes.append(_not_supported(field, match, (EXACT, NOT_OLDER_THAN, "")))
        if match == EXACT and rv == "0":
            causes.append(
                _forbidden(field, f'{field} "exact" is forbidden for resourceVersion "0"')
            )
    if send_initial is not None:
        causes.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return causes


def list_options(
    query: dict[str, str],
    watch: bool,
    res: Resource,
    *,
    watch_list: bool = True,
    sharded: bool = False,
) -> ListOptions:
    """The options of a list (``watch`` False) or watch of ``res``; 400 or 422 as the module
    says (``watch_list``: the WatchList gate; ``sharded``: ShardedListAndWatch)."""
    timeout = _int64(query, "timeoutSeconds")
    limit = _int64(query, "limit")
    labels = parse_label_selector(query.get("labelSelector"))
    shard_text = query.get("shardSelector")  # "" is the field left out, as kube reads it
    shards = parse_shard_selector(shard_text) if shard_text else None
    fields_text = query.get("fieldSelector")
    rv = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch", "")
    continue_token = query.get("continue", "")
    raw_initial = query.get("sendInitialEvents")
    send_initial = None if raw_initial is None else parse_bool(raw_initial)
    if match or send_initial is not None:  # the common request skips validation entirely
        causes = _validate(watch, rv, match, continue_token, send_initial, watch_list)
        if causes:
            raise errors.invalid("ListOptions", "", causes, "meta.k8s.io")
    fields = parse_field_selector(fields_text, res.field_labels, res.kind)
    if continue_token and not watch and rv not in ("", "0"):
        raise errors.bad_request("specifying resource version is not allowed when using continue")
    bookmarks = query.get("allowWatchBookmarks")
    return ListOptions(
        labels,
        fields,
        rv,
        match,
        timeout,
        limit or 0,
        continue_token,
        bookmarks is not None and parse_bool(bookmarks),
        send_initial if watch else None,
        shards if sharded else None,
    )


def watch_timeout(timeout_seconds: int | None) -> float | None:
    """Seconds a watch may last (None: no limit; 0 or less: it ends at once), from kube's
    ``time.Duration(timeoutSeconds) * time.Second`` — int64 nanoseconds, wrapping as Go's
    multiplication does for a value past about 292 years."""
    if not timeout_seconds:
        return None
    nanoseconds = (timeout_seconds * 1_000_000_000 + 2**63) % 2**64 - 2**63
    if nanoseconds == 0:
        return None
    return nanoseconds / 1e9
