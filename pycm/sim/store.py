# Over 500 lines, one concept: kube's generic registry store (every verb over versioned tables).
"""The emulator's storage: every object, one global resourceVersion, the watch history.

The store is synchronous and in memory; every public method runs to completion inside one event
loop step, so a write, its watch events and the garbage collection it triggers are atomic
with respect to every reader. It is also the in-process API for the simulated kubelet and for
tests: ``get / list / create / update / update_status / patch / delete / watch`` take a
:class:`~pycm.sim.resources.Resource` (``store.resource("pods")``) and plain dicts, and raise
:class:`~pycm.sim.errors.APIError` exactly as the HTTP API answers.

The store is the same for every kind: what a kind does differently (defaults, status handling,
validation, generation, grace periods) is asked of its strategy (``res.strategy``, see
:mod:`pycm.sim.registry`). Its helpers own the rest: :mod:`pycm.sim.table` (one kind's objects
in key order, lists and their pages), :mod:`pycm.sim.servermeta` (the metadata the server owns,
preconditions), :mod:`pycm.sim.deletion` (a DELETE, graceful and pending deletions),
:mod:`pycm.sim.gc` (owner references), :mod:`pycm.sim.namespace_controller` (namespace
admission and termination), :mod:`pycm.sim.event_ttl` (Events expire),
:mod:`pycm.sim.managedfields` (each write's managedFields). ``serve`` / ``unserve`` change the
kinds it serves.

Invariants:
- ``_rv`` is the resourceVersion of the newest write; every stored object's
  ``metadata.resourceVersion`` is ``str`` of the rv of the write that produced it.
- ``_history`` holds the newest ``watch_window`` events (see :mod:`pycm.sim.history`).
- Stored objects are never mutated: a write stores a new dict. Events and watchers share them.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from pycm.sim import errors, managedfields, servermeta, validation
from pycm.sim.deletion import Deleter
from pycm.sim.event_ttl import EVENT_TTL, Expiry
from pycm.sim.gc import (
    DeleteOptions,
    GarbageCollector,
    ObjectRef,
)
from pycm.sim.history import DEFAULT_HISTORY_BYTES, History, event_size
from pycm.sim.namespace_controller import NamespaceController
from pycm.sim.objects import Obj, deep_copy, meta, rfc3339
from pycm.sim.patch import apply_patch
from pycm.sim.resources import REGISTRY, Registry, Resource, ResourceKey
from pycm.sim.scale import scale_replicas
from pycm.sim.selectors import FieldSelector, LabelSelector
from pycm.sim.shardselector import ShardSelector
from pycm.sim.table import ListPage, Table
from pycm.sim.versions import parse_resource_version
from pycm.sim.watch import ADDED, DELETED, MODIFIED, StoreEvent, Watcher
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["EVENT_TTL", "DeleteOptions", "ListPage", "Store"]

ObjList = list[Obj]  # `Store.list` shadows the builtin inside the class body


class Store:
    def __init__(
        self,
        registry: Registry | None = None,
        clock: Clock = REAL_CLOCK,
        watch_window: int = 10_000,
        watch_queue_size: int = 1_000,
        graceful_pod_deletion: bool = False,
        watch_history_bytes: int = DEFAULT_HISTORY_BYTES,
        event_ttl: float = EVENT_TTL,
    ) -> None:
        if watch_window < 1:
            raise ValueError("watch_window must be at least 1")
        # This store's kinds: the built-ins unless given; serve() and unserve() change them.
        self.registry = registry if registry is not None else REGISTRY.copy()
        self.clock = clock
        self.watch_queue_size = watch_queue_size
        # Do grace periods (a pod's, from its strategy) delay removal until a kubelet confirms
        # (finish_graceful_deletion)? Without a kubelet nothing would ever confirm.
        self.graceful_pod_deletion = graceful_pod_deletion
        # One table per stored kind, keyed (namespace, name); created when first used.
        self._objects: dict[ResourceKey, Table] = {
            key: Table() for key, r in self.registry.resources.items() if r.stored
        }
        self._by_uid: dict[str, ObjectRef] = {}
        self._gc = GarbageCollector(self)
        self._deleter = Deleter(self, self._gc)
        self.namespaces = NamespaceController(self)
        self._rv = 0
        self._history = History(watch_window, watch_history_bytes)
        # Objects whose strategy ``expires`` (Events) go ``event_ttl`` s after their last write.
        self._expiry = Expiry(clock, event_ttl)
        self._watchers: set[Watcher] = set()

    # ---------------------------------------------------------------- reading

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def compacted_resource_version(self) -> int:
        return self._history.compacted_rv

    @property
    def watcher_count(self) -> int:
        return len(self._watchers)

    def resource(self, plural: str, group: str = "") -> Resource:
        """The registered kind ``plural`` in ``group`` (KeyError if unknown)."""
        return self.registry.resources[(group, plural)]

    @property
    def event_ttl(self) -> float:
        return self._expiry.ttl

    def _table(self, res: Resource) -> Table:
        table = self._objects.get(res.key)
        if table is None:
            if not res.stored or self.registry.resources.get(res.key) is None:
                raise errors.method_not_allowed("GET", res.plural)
            table = self._objects[res.key] = Table()
        return table

    # ---------------------------------------------------------------- kinds served

    def serve(self, res: Resource) -> None:
        """Serve ``res`` from now on (discovery, routing, storage, watches): a new kind, or one
        more version of a kind served (see :meth:`Registry.add`)."""
        self.registry.add(res)
        if res.stored:
            self._objects.setdefault(res.key, Table())

    def unserve(self, group: str, plural: str) -> list[Resource]:
        """Stop serving a kind: every object is removed at once (DELETED to its watchers,
        finalizers not waited for) and it leaves discovery and routing; what was served is
        returned (nothing if it was not). Open watches are not cut (that would drop the
        DELETED events queued for them): they end at their timeout, and a new one gets 404."""
        storage = self.registry.resources.get((group, plural))
        if storage is None:
            return []
        table = self._objects.get(storage.key) or Table()
        for key in sorted(table):
            obj = table.get(key)
            if obj is not None:
                self.remove_now(storage, obj)
        self._objects.pop(storage.key, None)
        return self.registry.remove(group, plural)

    def rewrite_in_place(self, res: Resource, change: Callable[[Obj], Obj | None]) -> int:
        """Store each object of ``res`` as ``change`` returns it (None: as it is), keeping its
        resourceVersion and sending no watch event — what readers of kube's storage see when a
        CRD's schema gains a default (kube applies defaults as it reads). How many changed."""
        table = self._objects.get(res.key)
        changed = 0
        for key in list(table or ()):
            obj = table.get(key) if table is not None else None
            new = change(obj) if obj is not None else None
            if table is not None and new is not None:
                table.put(key, new, orjson.dumps(new))
                changed += 1
        return changed

    def _ns(self, res: Resource, namespace: str | None) -> str:
        return (namespace or "") if res.namespaced else ""

    def _stored(self, res: Resource, namespace: str | None, name: str) -> Obj:
        obj = self._table(res).get((self._ns(res, namespace), name))
        if obj is None:
            raise errors.not_found(res.plural, name, res.group)
        return obj

    def get(self, res: Resource, namespace: str | None, name: str) -> Obj:
        return deep_copy(self._stored(res, namespace, name))

    def peek(self, res: Resource, namespace: str | None, name: str) -> Obj | None:
        """The stored object itself, or None (read-only: never mutate it)."""
        return self._table(res).get((self._ns(res, namespace), name))

    def list(
        self,
        res: Resource,
        namespace: str | None = None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        shards: ShardSelector | None = None,
    ) -> tuple[list[Obj], int]:
        """Copies of the matching objects (ordered by namespace, name) and the current rv."""
        selected = self._table(res).select(
            namespace, labels or LabelSelector(), fields or FieldSelector(), shards=shards
        )
        return [deep_copy(obj) for _, obj in selected], self._rv

    def list_page(
        self,
        res: Resource,
        namespace: str | None = None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        limit: int | None = None,
        continue_from: tuple[int, str, str] | None = None,
        shards: ShardSelector | None = None,
    ) -> ListPage:
        """One page of a chunked list; ``continue_from`` is a decoded (rv, ns, name) token.

        The items are the store's own dicts (the caller encodes them; never mutate). A continued
        page is read from the current state, not a snapshot at the token's rv, and carries the
        token's rv: a watch started from it replays anything that changed meanwhile.
        """
        list_rv = self._rv
        after: tuple[str, str] | None = None
        if continue_from is not None:
            token_rv, ns, name = continue_from
            if token_rv > self._rv:
                raise errors.bad_request(
                    "continue key is not valid: the resource version is in the future"
                )
            self._history.check(
                token_rv,
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter.",
            )
            list_rv = token_rv
            after = (ns, name)
        labels, fields = labels or LabelSelector(), fields or FieldSelector()
        return self._table(res).page(namespace, labels, fields, limit, after, list_rv, shards)

    def lookup_uid(self, uid: str) -> tuple[Resource, Obj] | None:
        ref = self._by_uid.get(uid)
        if ref is None:
            return None
        key, ns, name = ref
        obj = self._objects[key].get((ns, name))
        if obj is None:
            return None
        return self.registry.resources[key], obj

    # ---------------------------------------------------------------- history and watchers

    def _commit(self, res: Resource, type_: str, obj: Obj, old: Obj | None) -> Obj:
        return self._commit_encoded(res, type_, obj, old)[0]

    def _commit_encoded(
        self, res: Resource, type_: str, obj: Obj, old: Obj | None
    ) -> tuple[Obj, bytes]:
        """Store ``obj``; returns it and its encoding (a copy decoded from those bytes is a
        deep copy at half the price of another round trip)."""
        self._rv += 1
        meta(obj)["resourceVersion"] = str(self._rv)
        m = obj["metadata"]
        ref: ObjectRef = (res.key, m.get("namespace", "") if res.namespaced else "", m["name"])
        # Encoded once here: the history sizes the event by it, every typed watch serves these
        # bytes and the table keeps them for lists (the object is never mutated after its
        # commit).
        encoded = orjson.dumps(obj)
        table = self._objects[res.key]
        if old is not None:
            self._gc.index.remove(ref, old)
        if type_ == DELETED:
            table.pop(ref[1:])
            self._by_uid.pop(str(m.get("uid")), None)
        else:
            table.put(ref[1:], obj, encoded)
            self._by_uid[str(m.get("uid"))] = ref
            self._gc.index.add(ref, obj)
        event = StoreEvent(type_, res.key, obj, old, self._rv, encoded)
        self._history.append(event, event_size(encoded))
        for watcher in list(self._watchers):
            watcher.offer(event)
        if res.strategy.expires and type_ != DELETED:
            self._expiry.written(res.key, ref[1], ref[2], str(self._rv))
        self._expiry.expire(self)
        res.strategy.committed(self, res, type_, obj)
        return obj, encoded

    def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        resource_version: str | None = None,
        capacity: int | None = None,
        shards: ShardSelector | None = None,
    ) -> Watcher:
        """Start a watch. ``resource_version`` "" / "0" / None: ADDED for the current state,
        then live events; otherwise every event after it (410 Expired if compacted).
        ``shards``: only objects a shardSelector keeps.

        The caller must ``stop()`` the watcher when done with it.
        """
        self._table(res)
        watcher = Watcher(
            res.key,
            self._ns(res, namespace) or None,
            labels or LabelSelector(),
            fields or FieldSelector(),
            capacity or self.watch_queue_size,
            self._watchers.discard,
            shards,
        )
        if resource_version in (None, "", "0"):
            selected = self._table(res).select(
                watcher.namespace, watcher.labels, watcher.fields, shards=shards
            )
            table = self._table(res)
            for key, obj in selected:  # (served as their stored encodings: see Table)
                watcher.add_initial(ADDED, obj, table.encoded(key))
        else:
            since = parse_resource_version(resource_version) or 0
            watcher.replay(self._history.since(since))
        self._watchers.add(watcher)
        return watcher

    def drop_watches(self, reason: str = "dropped") -> int:
        """End every open watch (clients see the stream close and rewatch). Returns how many."""
        watchers = list(self._watchers)
        for watcher in watchers:
            watcher.close(reason)
        return len(watchers)

    def compact(self) -> int:
        """Forget the watch history: a watch or continue token older than now gets 410."""
        self._history.compact(self._rv)
        return self._rv

    # ---------------------------------------------------------------- writing

    def now(self) -> str:
        """The wall clock as a metadata timestamp."""
        return rfc3339(self.clock.wall_ns())

    _now = now

    def create(
        self,
        res: Resource,
        obj: Obj,
        namespace: str | None = None,
        keep_status: bool = False,
        *,
        manager: str = "",
        refuse_resource_version: bool = False,
    ) -> Obj:
        """Create ``obj`` (a copy is stored). Returns a copy of what was stored.

        ``manager`` names the writer in ``metadata.managedFields`` ("" is kube's ``unknown``);
        so do the other writes' (see :mod:`pycm.sim.managedfields`). A sent resourceVersion is
        dropped, or with ``refuse_resource_version`` (an API request) refused as kube's storage
        refuses it: a non-zero uint64 is an error (after validation, before the name is checked
        for a conflict), while "0" or one that does not parse passes (kubernetes#113847)."""
        if not res.stored:
            raise errors.method_not_allowed("POST", res.plural)
        strategy = res.strategy
        strategy.check_shape(obj)
        new = servermeta.typed(res, deep_copy(obj))
        strategy.decode(new)
        m = meta(new)
        ns = self._ns(res, namespace if namespace is not None else m.get("namespace"))
        if res.namespaced:
            m["namespace"] = ns
        else:
            m.pop("namespace", None)
        self.namespaces.admit(res, ns)
        table = self._table(res)
        now = self._now()
        servermeta.fill_for_create(m, taken=lambda name: (ns, name) in table, now=now)
        strategy.default(new)
        if not keep_status:
            strategy.prepare_for_create(new)
        causes = strategy.validate(new)
        if causes:
            raise errors.invalid(res.kind, str(m.get("name") or ""), causes, res.group)
        sent_rv = (obj.get("metadata") or {}).get("resourceVersion")
        if refuse_resource_version and servermeta.resource_version_is_set(sent_rv):
            raise errors.resource_version_set_on_create()
        if (ns, m["name"]) in table:
            raise errors.already_exists(res.plural, m["name"], res.group)
        if strategy.generation_on_spec:
            m["generation"] = 1
        managedfields.record(res, None, new, manager, "", now, trust_sent=True)
        _, encoded = self._commit_encoded(res, ADDED, new, None)
        created: Obj = orjson.loads(encoded)
        return created

    def update(
        self, res: Resource, obj: Obj, namespace: str | None = None, *, manager: str = ""
    ) -> Obj:
        """PUT: replace the object (its status kept if the kind has a status subresource)."""
        return self._update(res, obj, namespace, "", manager)

    def update_status(
        self, res: Resource, obj: Obj, namespace: str | None = None, *, manager: str = ""
    ) -> Obj:
        """PUT .../status: replace only the status."""
        if not res.has_status:
            raise errors.not_found(res.plural, "", res.group)
        return self._update(res, obj, namespace, "status", manager)

    def _update(
        self, res: Resource, obj: Obj, namespace: str | None, subresource: str, manager: str
    ) -> Obj:
        """PUT of the object (``subresource`` "" or "scale") or of its status ("status")."""
        strategy = res.strategy
        strategy.check_shape(obj)
        m_in = obj.get("metadata") or {}
        name = str(m_in.get("name") or "")
        if not name:
            raise errors.invalid(res.kind, "", [validation.required("metadata.name")], res.group)
        ns = self._ns(res, namespace if namespace is not None else m_in.get("namespace"))
        old = self._stored(res, ns, name)
        old_m = old["metadata"]
        servermeta.check_update_preconditions(res, name, m_in, old_m)
        new = deep_copy(obj)
        strategy.decode(new)
        if subresource == "status":
            strategy.prepare_for_status_update(new, old)
        else:
            strategy.prepare_for_update(new, old)
        new = servermeta.typed(res, new)
        m = meta(new)
        servermeta.keep_for_update(m, old_m)
        strategy.default(new)
        causes = strategy.validate_update(new, old)
        if causes:
            raise errors.invalid(res.kind, name, causes, res.group)
        if strategy.generation_changed(new, old):
            m["generation"] = int(old_m.get("generation") or 0) + 1
        managedfields.record(res, old, new, manager, subresource, self._now(), trust_sent=True)
        if new == old:
            return deep_copy(old)  # a no-op write does not bump the resourceVersion
        stored = self._commit(res, MODIFIED, new, old)
        self._maybe_finish_deletion(res, stored)
        return deep_copy(stored)

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch_type: str,
        patch: Any,
        subresource: str = "",
        field_validation: str | None = None,
        pruned: builtins.list[str] | None = None,
        *,
        manager: str = "",
    ) -> Obj:
        """PATCH (merge, strategic merge or JSON patch) the object or its status / scale.

        Fields the patch adds that the kind does not declare are pruned as a create's are
        (``field_validation``, see :mod:`pycm.sim.pruning`); their paths go to ``pruned``."""
        if subresource == "scale":
            scale = self.get_scale(res, namespace, name)
            patched = apply_patch(patch_type, scale, patch)
            return self.update_scale(res, namespace, name, patched, manager=manager)
        current = deep_copy(self._stored(res, namespace, name))
        current_rv = current["metadata"]["resourceVersion"]
        patched = apply_patch(patch_type, current, patch)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patch did not produce an object")
        dropped = res.strategy.prune(res.version, patched, field_validation, patch)
        if pruned is not None:
            pruned.extend(dropped)
        pm = meta(patched)
        if pm.get("name") != name:
            raise errors.bad_request(
                f"metadata.name: Invalid value: {pm.get('name')!r}: field is immutable"
            )
        # A patch that sets a resourceVersion is a precondition; one that does not, is not.
        if not pm.get("resourceVersion"):
            pm["resourceVersion"] = current_rv
        if subresource == "status":
            return self.update_status(res, patched, namespace, manager=manager)
        if subresource:
            raise errors.not_found(res.plural, name, res.group)
        return self.update(res, patched, namespace, manager=manager)

    # ---------------------------------------------------------------- scale subresource

    def get_scale(self, res: Resource, namespace: str | None, name: str) -> Obj:
        """GET .../scale: the object's ``autoscaling/v1 Scale``."""
        if not res.has_scale:
            raise errors.not_found(res.plural, name, res.group)
        return res.strategy.scale_of(self._stored(res, namespace, name))

    def update_scale(
        self, res: Resource, namespace: str | None, name: str, scale: Obj, *, manager: str = ""
    ) -> Obj:
        """PUT .../scale: set spec.replicas (the Scale's resourceVersion is a precondition)."""
        if not res.has_scale:
            raise errors.not_found(res.plural, name, res.group)
        replicas = scale_replicas(name, scale)
        current = deep_copy(self._stored(res, namespace, name))
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        if rv:
            current["metadata"]["resourceVersion"] = str(rv)
        res.strategy.set_replicas(current, replicas)
        self._update(res, current, namespace, "scale", manager)
        return self.get_scale(res, namespace, name)

    # ---------------------------------------------------------------- deletion

    def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        options: DeleteOptions | None = None,
    ) -> tuple[Obj, bool]:
        """DELETE. Returns (the object, removed now?). Not removed now means pending: it has
        a deletionTimestamp and waits for finalizers, dependents (Foreground) or the kubelet
        (see :mod:`pycm.sim.deletion`)."""
        return self._deleter.delete(res, namespace, name, options or DeleteOptions())

    def finish_graceful_deletion(
        self, res: Resource, namespace: str | None, name: str, uid: str | None = None
    ) -> bool:
        """A kubelet's confirmation that an object in its grace period has stopped: it is
        removed (or, if it still has finalizers, waits only for them). Returns whether it is
        gone (also when it was already, or ``uid`` names an earlier object of that name)."""
        return self._deleter.finish_graceful(res, namespace, name, uid)

    def finalize_pod_deletion(self, namespace: str, name: str, uid: str | None = None) -> bool:
        """:meth:`finish_graceful_deletion` of a pod (the simulated kubelet's call)."""
        return self.finish_graceful_deletion(self.resource("pods"), namespace, name, uid)

    def delete_collection(
        self,
        res: Resource,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        options: DeleteOptions | None = None,
        shards: ShardSelector | None = None,
    ) -> ObjList:
        """DELETE on a collection: delete each match; returns what each delete returned."""
        out = []
        selected = self._table(res).select(self._ns(res, namespace), labels, fields, shards=shards)
        for (ns, name), _ in selected:
            if self.peek(res, ns, name) is None:
                continue  # collected as a dependent of an earlier match
            obj, _ = self.delete(res, ns, name, options)
            out.append(obj)
        return out

    def contents(self, namespace: str) -> builtins.list[tuple[Resource, str]]:
        """Every stored object in ``namespace`` as (resource, name): kind by kind in
        registration order, by name within a kind."""
        out = []
        for key, table in self._objects.items():
            res = self.registry.resources.get(key)
            if res is None or not res.namespaced:
                continue
            out += [(res, name) for ns, name in sorted(k for k in table if k[0] == namespace)]
        return out

    def has_contents(self, namespace: str) -> bool:
        """Is any object stored in ``namespace``?"""
        resources = self.registry.resources
        for key, table in self._objects.items():
            res = resources.get(key)
            if res is not None and res.namespaced and any(k[0] == namespace for k in table):
                return True
        return False

    def _maybe_finish_deletion(self, res: Resource, obj: Obj) -> None:
        if obj["metadata"].get("deletionTimestamp") and res.strategy.deletion_finished(obj):
            self.remove_now(res, obj)

    def commit_modified(self, res: Resource, new: Obj, old: Obj) -> Obj:
        """Store ``new`` over the stored ``old`` as it is (MODIFIED): no preconditions, no
        managedFields write, no deletion step (the namespace controller's phase change)."""
        return self._commit(res, MODIFIED, new, old)

    def remove_now(self, res: Resource, obj: Obj) -> None:
        """Remove the stored ``obj`` (DELETED); then the collector collects what depended on
        it and a terminating namespace it emptied goes."""
        gone = deep_copy(obj)
        self._commit(res, DELETED, gone, obj)
        self._gc.after_removal(gone)
        ns = gone["metadata"].get("namespace")
        if res.namespaced and ns:
            self.namespaces.content_removed(ns)

    def peek_ref(self, ref: ObjectRef) -> Obj | None:
        table = self._objects.get(ref[0])
        return None if table is None else table.get(ref[1:])

    def replace(
        self, res: Resource, new: Obj, old: Obj, *, manager: str, subresource: str = ""
    ) -> Obj:
        """Store ``new`` over ``old`` (the stored dict, from ``peek``) without preconditions,
        defaults or validation — the in-process writes of the collector and the kubelet, as
        ``manager`` through ``subresource`` (the stored managedFields are the base).
        ``new`` becomes the stored object: do not mutate it afterwards."""
        managedfields.record(res, old, new, manager, subresource, self._now(), trust_sent=False)
        stored = self._commit(res, MODIFIED, new, old)
        self._maybe_finish_deletion(res, stored)
        return stored

    # ---------------------------------------------------------------- seeding

    def seed(self, res: Resource, objects: Iterable[Obj], manager: str = "") -> None:
        """Create ``objects`` keeping their status (a fresh cluster's namespaces and nodes)."""
        for obj in objects:
            self.create(res, obj, keep_status=True, manager=manager)
