"""Streaming lists (KEP-3157, kube's ``WatchList`` feature gate): a watch with
``sendInitialEvents``.

kube-apiserver (1.34+, the gate on) answers ``watch=true&sendInitialEvents=true`` — which must
come with ``resourceVersionMatch=NotOlderThan`` (:mod:`pycm.sim.listoptions` refuses anything
else with kube's 422) — by streaming the collection's current state as ADDED events, then, when
the client allows bookmarks, one BOOKMARK whose ``metadata.annotations`` carry
``k8s.io/initial-events-end: "true"`` and whose ``resourceVersion`` is the state's; after it the
stream goes on as any watch from that version. A shardSelector (KEP-5866) keeps the initial
events and the stream after them to its shard, as it does a plain watch's. The version named
by the request sets how fresh the state must be: none means a consistent read (the state as
the request is served), a given one "at least as new" — the emulator's state is always the
latest, so both are served from it;
one newer than anything the emulator has written is kube's 504 "Too large resource version"
(kube waits up to 3 s for its cache to catch up first; the emulator, which has no cache to wait
for, answers at once). ``sendInitialEvents=false`` asks for no initial events: the watch starts
at the current version (with a given version, it replays from there, as a plain watch).

With the gate off (``pycm sim --feature-gates=WatchList=false``), ``sendInitialEvents`` is
refused as kube refuses it (422), which is the answer client-go's reflector falls back to list
and watch on.
"""

from __future__ import annotations

from typing import Final

from pycm.sim import errors
from pycm.sim.listoptions import ListOptions
from pycm.sim.objects import Obj
from pycm.sim.resources import Resource
from pycm.sim.store import Store
from pycm.sim.versions import parse_resource_version
from pycm.sim.watch import BOOKMARK, Watcher

__all__ = ["INITIAL_EVENTS_END", "initial_events_bookmark", "watch_with_initial_events"]

INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"
"""The annotation that marks the bookmark ending a watch's initial events (metav1's
``InitialEventsAnnotationKey``)."""


def initial_events_bookmark(res: Resource, resource_version: int) -> Obj:
    """The BOOKMARK that ends the initial events: the kind's identity, the state's version and
    the annotation (what kube's watch cache sends)."""
    return {
        "kind": res.kind,
        "apiVersion": res.api_version,
        "metadata": {
            "resourceVersion": str(resource_version),
            "annotations": {INITIAL_EVENTS_END: "true"},
        },
    }


def _too_large(requested: int, current: int) -> errors.APIError:
    details = {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }
    message = f"Timeout: Too large resource version: {requested}, current: {current}"
    return errors.APIError(504, "Timeout", message, details, retry_after=1)


def watch_with_initial_events(
    store: Store, res: Resource, namespace: str | None, options: ListOptions, send: bool
) -> Watcher:
    """The watcher of a watch that gave ``sendInitialEvents`` (``send`` is its value), with its
    initial entries queued (see the module's doc). The caller stops it when done."""
    current = store.resource_version
    requested = parse_resource_version(options.resource_version) or 0
    if not send:
        # No initial events: from the given version as any watch, or from now.
        since = options.resource_version if requested else str(current)
        return store.watch(
            res, namespace, options.labels, options.fields, since, shards=options.shards
        )
    if requested > current:
        raise _too_large(requested, current)
    # The store queues an ADDED for every matching object and registers the watcher in one
    # synchronous step, so the version read just after is exactly the state they show.
    watcher = store.watch(
        res, namespace, options.labels, options.fields, None, shards=options.shards
    )
    if options.allow_watch_bookmarks:
        watcher.add_initial(BOOKMARK, initial_events_bookmark(res, store.resource_version))
    return watcher
