# Over 500 lines, one concept: the one registry of event kinds (docs and wire come from it).
"""Every trace event kind pycm emits: the one registry (see :mod:`pycm.trace.events`).

Grouped by the part of pycm that emits them. Wire names are ``<subject>.<verb>``; steps are a
``<step>.begin`` / ``<step>.end`` pair sharing one span id. docs/events.md is generated from this
module (``pycm trace kinds --markdown``); a test keeps it current. Add new kinds here, nowhere else.
"""

from __future__ import annotations

import enum

from pycm.trace.events import Event, StepBegin, StepEnd, kind

# ---------------------------------------------------------------------------------------------
# Outcome enums shared by several kinds
# ---------------------------------------------------------------------------------------------


class WatchCloseReason(enum.StrEnum):
    """Why a reflector's watch ended."""

    TIMEOUT = "timeout"  # the server ended it at timeoutSeconds (normal)
    EXPIRED = "expired"  # 410 Gone / Expired: the resourceVersion left the window; relist
    SERVER_CLOSED = "server_closed"  # the stream ended early without an error
    TOO_SHORT = "too_short"  # closed in under 1 s with no events ("very short watch")
    ERROR = "error"  # transport or API error; back off
    STOPPED = "stopped"  # the informer was stopped


class ReconcileResult(enum.StrEnum):
    """What the worker loop did with the key afterwards (controller-runtime's result labels)."""

    SUCCESS = "success"  # forget the key
    REQUEUE = "requeue"  # add_rate_limited without an error
    REQUEUE_AFTER = "requeue_after"  # add_after(requeue_after)
    ERROR = "error"  # add_rate_limited, or dropped after max retries
    CONFLICT = "conflict"  # a 409 on write: quiet requeue


class AcquireResult(enum.StrEnum):
    """The result of one tryAcquireOrRenew attempt while not (yet) leading."""

    ACQUIRED = "acquired"  # took an expired or empty lease
    CREATED = "created"  # the lease did not exist and was created with us as holder
    HELD_BY_OTHER = "held_by_other"  # another holder's term is still valid
    ERROR = "error"  # an API error (the message is in ``error``)
    NOT_ELECTED = "not_elected"  # coordinated: waiting for the coordinator to name a holder


class RenewFailureReason(enum.StrEnum):
    """Why a renew round failed."""

    TIMEOUT = "timeout"  # RenewDeadline passed without a successful update
    CONFLICT = "conflict"  # the update lost an optimistic-concurrency race
    API_ERROR = "api_error"  # the API server answered with an error or did not answer
    NOT_HOLDER = "not_holder"  # the lease names another holder
    STEPPED_DOWN = "stepped_down"  # coordinated: the lease names another preferredHolder


# ---------------------------------------------------------------------------------------------
# Start-up and serving (pycm.app, pycm.server)
# ---------------------------------------------------------------------------------------------


@kind("startup.end")
class StartupFinished(StepEnd):
    """The manager's start-up ended (leader-only work included, up to InformersStarted)."""

    controllers_started: int = 0


@kind("startup.begin")
class StartupBegan(StepBegin):
    """The manager began starting: the root of the start-up trace."""

    STEP = "startup"
    END = StartupFinished
    command: str = ""
    version: str = ""


@kind("flags.parsed")
class FlagsParsed(Event):
    """Flags and the component config were parsed and validated; lists only non-default values."""

    command: str = ""
    changed: str = ""  # "flag=value" pairs, comma-separated, sorted; values of secrets withheld
    changed_count: int = 0
    config_file: str = ""


@kind("server.handler_chain_built")
class HandlerChainBuilt(Event):
    """The serving handler chain was assembled; ``layers`` lists it outermost first."""

    layers: str = ""
    count: int = 0
    secure: bool = True


@kind("server.serving_started")
class ServingStarted(Event):
    """A server started listening."""

    address: str = ""
    port: int = 0
    secure: bool = True
    cert_source: str = ""  # "files", "self-signed" or "" for plain HTTP


@kind("server.serving_stopped")
class ServingStopped(Event):
    """A server stopped listening."""

    address: str = ""
    port: int = 0


@kind("health.check_changed")
class HealthCheckChanged(Event):
    """A named health check turned healthy or unhealthy."""

    check: str = ""
    healthy: bool = True
    reason: str = ""


@kind("manager.stopped")
class ManagerStopped(Event):
    """The manager stopped; ``exit_code`` is the process status it will exit with."""

    reason: str = ""
    exit_code: int = 0


# ---------------------------------------------------------------------------------------------
# Controllers (pycm.app StartControllers, pycm.controller)
# ---------------------------------------------------------------------------------------------


@kind("controller.init.end")
class ControllerInitFinished(StepEnd):
    """A controller's init function returned; ``started`` is False when it chose not to start."""

    controller: str = ""
    started: bool = False
    reason: str = ""


@kind("controller.init.begin")
class ControllerInitBegan(StepBegin):
    """StartControllers called a controller's init function."""

    STEP = "controller.init"
    END = ControllerInitFinished
    controller: str = ""


@kind("controller.disabled")
class ControllerDisabled(Event):
    """A registered controller was not started (disabled by --controllers or by default)."""

    controller: str = ""
    reason: str = ""


@kind("controllers.took_over")
class ControllersTookOver(Event):
    """This replica leads now and starts its controllers' workers. ``warm``: its informers ran
    while it was a standby (--leader-elect-warm-standby): ``synced`` of ``informers`` had synced
    and ``queued`` keys already waited in its controllers' queues, so the first reconciles need
    no list. Cold (the default), the informers start only now and all three are 0."""

    warm: bool = False
    informers: int = 0
    synced: int = 0
    queued: int = 0


@kind("controller.started")
class ControllerStarted(Event):
    """A controller's workers started (after its caches synced)."""

    controller: str = ""
    workers: int = 0


@kind("controller.stopped")
class ControllerStopped(Event):
    """A controller's workers stopped."""

    controller: str = ""


@kind("controller.token_requested")
class ControllerTokenRequested(Event):
    """--use-service-account-credentials: a controller's client asked for a token of its
    service account (TokenRequest). Never the token: its lifetime and when it is refreshed."""

    controller: str = ""
    namespace: str = ""
    service_account: str = ""
    attempt: int = 0
    expires_in_s: float = 0.0  # the token's lifetime as issued
    refresh_in_s: float = 0.0  # when the client will ask again (lifetime less the leeway)
    error: str = ""  # set when this attempt failed


@kind("reconcile.end")
class ReconcileFinished(StepEnd):
    """A sync of one key ended: what the worker does next (``result``) and what it did."""

    controller: str = ""
    key: str = ""
    result: ReconcileResult = ReconcileResult.SUCCESS
    action: str = ""  # what the sync did: "noop", "created_rs", "scaled_up", "status_updated", ...
    uid: str = ""
    api_calls: int = 0
    requeue_after_ms: float = 0.0
    retries: int = 0


@kind("reconcile.begin")
class ReconcileStarted(StepBegin):
    """A worker took a key and began its sync. ``trigger_*`` link to the enqueuing event."""

    STEP = "reconcile"
    END = ReconcileFinished
    controller: str = ""
    key: str = ""
    namespace: str = ""
    name: str = ""
    resource: str = ""  # the reconciled kind's resource, e.g. "deployments"
    queue_wait_ms: float = 0.0
    retries: int = 0
    # Why it ran (pycm.trace.causes.Trigger): the newest of the events that enqueued the key.
    trigger_kind: str = ""  # the kind of the object whose watch event enqueued the key, e.g. "Pod"
    trigger_object: str = ""  # that object's namespace/name (may differ from the key)
    trigger_rv: str = ""  # that object's resourceVersion in the event
    # add, update, delete (watch events), initial (the informer's first list), relist (a later
    # list), resync, retry (the last reconcile of the key failed), requeue, requeue_after (it
    # asked to come back), "" (enqueued without a cause, e.g. by a plugin's own call)
    trigger_event: str = ""
    trigger_paths: str = ""  # an update's changed field paths, comma-separated, bounded
    # When the event's object was written by a reconcile of this manager: that reconcile's ids,
    # controller and key, and the write's verb (create, update, patch, delete). For retry and
    # requeue: the reconcile of the key that asked for it.
    trigger_trace_id: str = ""
    trigger_span_id: str = ""
    trigger_controller: str = ""
    trigger_key: str = ""
    trigger_verb: str = ""
    # Else the writer the object names: its newest metadata.managedFields entry.
    trigger_writer: str = ""  # its manager, e.g. "kubectl-scale"
    trigger_operation: str = ""  # Update or Apply
    trigger_write_time: str = ""  # its time (RFC 3339)
    # Several events merged into this one reconcile (the queue held the key): how many, and
    # the first of them (the newest is trigger_*).
    trigger_merged: int = 0
    first_trigger_event: str = ""
    first_trigger_kind: str = ""
    first_trigger_object: str = ""
    first_trigger_rv: str = ""
    first_trigger_writer: str = ""
    first_trigger_trace_id: str = ""
    first_trigger_span_id: str = ""


# ---------------------------------------------------------------------------------------------
# Operator helpers (pycm.controller: finalizers, conditions, owner references, create-or-update)
# Emitted inside the reconcile that called them, so each is a child of its trace.
# ---------------------------------------------------------------------------------------------


class EnsureResult(enum.StrEnum):
    """What create_or_update did (controller-runtime's OperationResult)."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@kind("finalizer.added")
class FinalizerAdded(Event):
    """A finalizer was added to an object (nothing is emitted when it was already there)."""

    resource: str = ""
    namespace: str = ""
    name: str = ""
    finalizer: str = ""


@kind("finalizer.removed")
class FinalizerRemoved(Event):
    """A finalizer was removed from an object (nothing when it was not there)."""

    resource: str = ""
    namespace: str = ""
    name: str = ""
    finalizer: str = ""


@kind("condition.set")
class ConditionSet(Event):
    """A status condition was written through the status subresource (``transitioned``: its
    status changed, so did its lastTransitionTime). The message is not carried."""

    resource: str = ""
    namespace: str = ""
    name: str = ""
    type: str = ""
    status: str = ""
    reason: str = ""
    observed_generation: int = 0
    transitioned: bool = False


@kind("ownerref.set")
class OwnerReferenceSet(Event):
    """An owner reference was set on an object before it was written (``controller``: as its
    controller)."""

    owner_kind: str = ""
    owner_name: str = ""
    object_kind: str = ""
    namespace: str = ""
    name: str = ""
    controller: bool = False


@kind("object.ensured")
class ObjectEnsured(Event):
    """create_or_update brought an object to what the reconcile wants: created, updated or
    left unchanged (no write)."""

    resource: str = ""
    namespace: str = ""
    name: str = ""
    result: EnsureResult = EnsureResult.UNCHANGED


# ---------------------------------------------------------------------------------------------
# Informers (pycm.cache)
# ---------------------------------------------------------------------------------------------


@kind("informer.started")
class InformerStarted(Event):
    """A shared informer's reflector started."""

    resource: str = ""
    metadata_only: bool = False
    resync_s: float = 0.0


@kind("informer.list.end")
class InformerListFinished(StepEnd):
    """A reflector's list (all pages) ended."""

    resource: str = ""
    items: int = 0
    bytes: int = 0
    pages: int = 0
    resource_version: str = ""


@kind("informer.list.begin")
class InformerListBegan(StepBegin):
    """A reflector began listing (``resource_version`` is the one requested: "0" or "");
    ``watch_list``: by a streaming list (one watch with sendInitialEvents, no pages)."""

    STEP = "informer.list"
    END = InformerListFinished
    resource: str = ""
    resource_version: str = ""
    watch_list: bool = False


@kind("informer.watchlist_fallback")
class InformerWatchListFellBack(Event):
    """A reflector's streaming list (WatchList) failed and it lists instead: ``permanent`` when
    the server does not support it (refused, or ignored sendInitialEvents), so it lists from
    now on; otherwise for this round. Emitted for a reflector's first fallback only."""

    resource: str = ""
    reason: str = ""
    permanent: bool = False


@kind("informer.watch_opened")
class WatchOpened(Event):
    """A reflector opened a watch from ``resource_version``."""

    resource: str = ""
    resource_version: str = ""
    timeout_s: float = 0.0


@kind("informer.watch_closed")
class WatchClosed(Event):
    """A reflector's watch ended, with the number of events it carried."""

    resource: str = ""
    reason: WatchCloseReason = WatchCloseReason.TIMEOUT
    events: int = 0
    resource_version: str = ""
    error: str = ""


@kind("informer.progress")
class InformerProgress(Event):
    """A synced informer's cache and watch, reported every few seconds while they change: a
    watch lasts 5 to 10 minutes and ``WatchClosed`` counts its events only at the end, so
    without this report a live view would show the list's size and no watch traffic.

    ``watch_events`` counts the open watch's events so far (0 between watches); ``pending`` is
    the deltas received and not yet applied to the cache (the informer's backlog)."""

    resource: str = ""
    objects: int = 0
    watch_events: int = 0
    pending: int = 0
    resource_version: str = ""


@kind("informer.relist")
class InformerRelisted(Event):
    """A reflector decided to list again (410 Expired, an error, or a resync of the list)."""

    resource: str = ""
    reason: str = ""


@kind("informer.backoff")
class InformerBackedOff(Event):
    """A reflector waits before its next list or watch."""

    resource: str = ""
    delay_ms: float = 0.0
    reason: str = ""


@kind("informer.synced")
class InformerSynced(Event):
    """An informer's cache holds the initial list and every handler got its initial adds."""

    resource: str = ""
    objects: int = 0
    duration_ms: float = 0.0


@kind("informer.handler_lagged")
class HandlerLagged(Event):
    """An informer handler fell behind: its bounded buffer dropped ``lost`` notifications."""

    resource: str = ""
    handler: str = ""
    lost: int = 0


@kind("informers.started")
class InformersStarted(Event):
    """Both informer factories were started after every controller registered its informers.
    ``standby``: started before this replica leads (--leader-elect-warm-standby), so its caches
    sync while it is a standby and its controllers wait for the lease."""

    informers: int = 0
    standby: bool = False


# ---------------------------------------------------------------------------------------------
# API client (pycm.kube)
# ---------------------------------------------------------------------------------------------


@kind("api.request")
class ApiRequestCompleted(Event):
    """One HTTP request to the API server ended (``dur_ns`` holds its latency)."""

    verb: str = ""  # Kubernetes verb: get, list, watch, create, update, patch, delete, ...
    method: str = ""  # HTTP method
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    host: str = ""
    path: str = ""  # the URL path, without the query
    code: int = 0  # HTTP status; 0 when no response arrived
    bytes: int = 0  # response body size
    rate_limiter_wait_ms: float = 0.0
    retries: int = 0
    error: str = ""
    # A write's (create, update, patch, delete) outcome: the resourceVersion the response
    # returned, and for a create the name the server gave (generateName).
    resource_version: str = ""
    # The write was refused before it was sent (code 0): this replica's last lease renew was
    # older than its renew deadline (pycm.kube.errors.FencedError names both).
    fenced: bool = False


# ---------------------------------------------------------------------------------------------
# Work queues (pycm.workqueue)
# ---------------------------------------------------------------------------------------------


@kind("queue.add")
class ItemAdded(Event):
    """A key was added to a work queue (``queued`` is False when it was already waiting)."""

    queue: str = ""
    key: str = ""
    reason: str = ""  # "add", "update", "delete", "resync", "rate_limited", "after", ...
    queued: bool = True
    depth: int = 0


@kind("queue.get")
class ItemTaken(Event):
    """A worker took a key off a queue after ``wait_ms`` in it."""

    queue: str = ""
    key: str = ""
    wait_ms: float = 0.0
    depth: int = 0


@kind("queue.retry")
class ItemRequeued(Event):
    """A key was scheduled to come back after ``delay_ms`` (AddRateLimited / AddAfter)."""

    queue: str = ""
    key: str = ""
    delay_ms: float = 0.0
    retries: int = 0


@kind("queue.drop")
class ItemDropped(Event):
    """A key was given up on (max retries reached, or a terminal error)."""

    queue: str = ""
    key: str = ""
    retries: int = 0
    reason: str = ""


@kind("queue.done")
class ItemDone(Event):
    """A worker finished a key after ``work_ms`` of processing."""

    queue: str = ""
    key: str = ""
    work_ms: float = 0.0
    depth: int = 0


@kind("queue.shutdown")
class QueueShutDown(Event):
    """A work queue was shut down (``drained`` when it waited for in-flight items)."""

    queue: str = ""
    drained: bool = False


@kind("queue.stuck")
class WorkerStuck(Event):
    """A worker has held one key longer than --stuck-worker-threshold (pycm.controller.stuck):
    marked once per processing of the key."""

    controller: str = ""  # the controller (its queue's name)
    key: str = ""  # the key held
    worker: int = -1  # the index of the worker holding it (-1: not a controller's worker)
    processing_s: float = 0.0  # how long it had held the key when marked
    threshold_s: float = 0.0  # --stuck-worker-threshold


@kind("queue.unstuck")
class WorkerUnstuck(Event):
    """A key marked stuck (``queue.stuck``) is no longer processed: its worker let it go."""

    controller: str = ""  # the controller (its queue's name)
    key: str = ""  # the key let go
    worker: int = -1  # the index of the worker that held it
    processing_s: float = 0.0  # how long it was held, at least (seen by the watcher's tick)


# ---------------------------------------------------------------------------------------------
# Leader election (pycm.leaderelection, and `pycm lease watch`)
# ---------------------------------------------------------------------------------------------


@kind("lease.election_configured")
class LeaderElectionConfigured(Event):
    """An elector starts campaigning for ``lease`` (its lock) with these timings, in seconds:
    the viewers' renew-deadline and lease-duration marks come from here (a recording made
    before this kind existed has none: they fall back to Kubernetes' defaults and say so).
    ``coordinated``: the API server's coordinator picks the holder (KEP-4355)."""

    lease: str = ""  # namespace/name
    identity: str = ""
    lease_duration_s: float = 0.0
    renew_deadline_s: float = 0.0
    retry_period_s: float = 0.0
    coordinated: bool = False
    release_on_cancel: bool = False


@kind("lease.acquire_attempt")
class LeaseAcquireAttempted(Event):
    """One attempt to acquire the lease while not leading."""

    lease: str = ""  # namespace/name
    identity: str = ""
    result: AcquireResult = AcquireResult.HELD_BY_OTHER
    holder: str = ""  # the holder seen on the lease
    error: str = ""


@kind("lease.acquired")
class LeaseAcquired(Event):
    """This instance became leader after ``waited_ms`` of trying."""

    lease: str = ""
    identity: str = ""
    transitions: int = 0
    waited_ms: float = 0.0


@kind("lease.renewed")
class LeaseRenewed(Event):
    """The leader renewed its lease (``fast_path`` when no GET was needed)."""

    lease: str = ""
    identity: str = ""
    latency_ms: float = 0.0
    fast_path: bool = True


@kind("lease.renew_failed")
class LeaseRenewFailed(Event):
    """A renew attempt (or a whole renew round, for ``timeout``) failed."""

    lease: str = ""
    identity: str = ""
    reason: RenewFailureReason = RenewFailureReason.API_ERROR
    latency_ms: float = 0.0
    error: str = ""


@kind("lease.released")
class LeaseReleased(Event):
    """The leader released its lease on shutdown (ReleaseOnCancel)."""

    lease: str = ""
    identity: str = ""


@kind("lease.lost")
class LeaseLost(Event):
    """The leader stopped leading (its renew deadline passed or it saw another holder)."""

    lease: str = ""
    identity: str = ""
    reason: str = ""


@kind("lease.leader_observed")
class LeaderObserved(Event):
    """The holder seen on a lease changed; ``skew_ms`` is renewTime minus the local clock."""

    lease: str = ""
    old_holder: str = ""
    new_holder: str = ""
    transitions: int = 0
    lease_duration_s: float = 0.0
    skew_ms: float = 0.0


@kind("lease.candidate_renewed")
class LeaseCandidateRenewed(Event):
    """This instance's LeaseCandidate (coordinated leader election) was created or renewed;
    ``pinged``: in answer to the coordinator's ping."""

    candidate: str = ""  # namespace/name of the LeaseCandidate (the elector identity)
    lease: str = ""  # namespace/name of the Lease it contends for
    binary_version: str = ""
    emulation_version: str = ""
    strategy: str = ""
    pinged: bool = False


@kind("lease.coordination_observed")
class LeaseCoordinationObserved(Event):
    """The coordinator's fields on a Lease changed: its ``strategy``, and the
    ``preferred_holder`` it asks the holder to hand over to ("" none)."""

    lease: str = ""
    holder: str = ""
    preferred_holder: str = ""
    strategy: str = ""


# ---------------------------------------------------------------------------------------------
# The event recorder (pycm.record)
# ---------------------------------------------------------------------------------------------


class EventAction(enum.StrEnum):
    """What the recorder did with a core/v1 Event."""

    CREATED = "created"  # a new Event object was written
    PATCHED = "patched"  # a repeat: the existing Event's count and lastTimestamp were bumped
    AGGREGATED = "aggregated"  # similar events were combined into one ("combined from similar")
    SPAM_FILTERED = "spam_filtered"  # the per-object rate limit dropped it
    DROPPED = "dropped"  # the recorder's queue was full, or writing failed after retries


@kind("event.recorded")
class EventRecorded(Event):
    """A core/v1 Event was handled by the recorder (the message itself is not carried)."""

    type: str = ""  # Normal or Warning
    reason: str = ""
    object_kind: str = ""
    namespace: str = ""
    name: str = ""
    count: int = 0
    action: EventAction = EventAction.CREATED


# ---------------------------------------------------------------------------------------------
# Sharding (pycm.sharding.membership, pycm.app.sharding): one member of a ring. Names, counts,
# fractions and timings only. ``ring`` is the ring's name, ``member`` the emitting member's
# identity; member lists are identities, comma-separated and sorted.
# ---------------------------------------------------------------------------------------------


@kind("shard.member_joined")
class ShardMemberJoined(Event):
    """This member's Lease was first written with a view that includes it: it is on the ring."""

    ring: str = ""
    member: str = ""
    view: str = ""  # the members of the view it published
    share: float = (
        0.0  # its share under that view's ring (of the laid-out namespaces, else of the hash space)
    )


@kind("shard.member_left")
class ShardMemberLeft(Event):
    """This member left the ring: it drained, wrote an empty view and deleted its Lease."""

    ring: str = ""
    member: str = ""
    on_ring_s: float = 0.0  # from its join to its release


@kind("shard.member_fenced")
class ShardMemberFenced(Event):
    """This member's own Lease was not renewed within the renew deadline: it takes no key (its
    claim may be dead for the others). ``renew_age_s`` is -1 when it never renewed."""

    ring: str = ""
    member: str = ""
    renew_age_s: float = 0.0
    renew_deadline_s: float = 0.0


@kind("shard.member_unfenced")
class ShardMemberUnfenced(Event):
    """A fenced member renewed its Lease again after ``fenced_s`` seconds."""

    ring: str = ""
    member: str = ""
    fenced_s: float = 0.0


@kind("shard.view_changed")
class ShardViewChanged(Event):
    """The view this member has published, or its target (itself and the live members it sees),
    changed. ``share`` and ``target_share`` are its shares under each (of the namespaces the
    ring's layout places, else of the hash space)."""

    ring: str = ""
    member: str = ""
    view: str = ""
    target: str = ""
    members: int = 0  # live members in the target
    share: float = 0.0
    target_share: float = 0.0
    joined: str = ""  # members new in the target since the previous report
    left: str = ""  # members gone from the target since the previous report
    keys_in_flight: int = 0  # keys this member was reconciling


@kind("shard.drain_started")
class ShardDrainStarted(Event):
    """The target moved part of this member's share to others: it stopped taking those keys and
    waits for ``keys`` in-flight reconciles of them before it publishes the new view."""

    ring: str = ""
    member: str = ""
    keys: int = 0
    share_dropped: float = 0.0  # the fraction of the hash space it gives up


@kind("shard.drain_finished")
class ShardDrainFinished(Event):
    """This member published the view it drained for: the dropped keys are the others' now.
    ``keys``: the most in-flight keys it waited for."""

    ring: str = ""
    member: str = ""
    keys: int = 0
    share_dropped: float = 0.0
    duration_ms: float = 0.0


@kind("shard.relist")
class ShardRelisted(Event):
    """This member's share changed: its sharded informers relist with the new ``shardSelector``.
    ``objects_cached``: what they held before the relist; ``keys_cached``: what its sharded
    controllers' primary informers held (the keys of its share), ``key_resources`` naming those."""

    ring: str = ""
    member: str = ""
    informers: int = 0
    share: float = 0.0  # the selector's fraction of the hash space (published and target)
    spans: int = 0  # the selector's hash spans
    objects_cached: int = 0
    resources: str = ""  # the sharded informers' resources, comma-separated
    keys_cached: int = 0
    key_resources: str = ""  # those whose objects are reconcile keys, comma-separated


# ---------------------------------------------------------------------------------------------
# The sharding layout (pycm.sharding.layout_writer, pycm.sharding.membership)
# ---------------------------------------------------------------------------------------------
# Where namespace hashes sit on the ring. Counts and digests only, never namespace names.


@kind("shard.layout_changed")
class ShardLayoutChanged(Event):
    """This member wrote a new layout for the ring (the old one was clearly unbalanced): every
    member adopts it like a membership change (drain what moves, publish, relist)."""

    ring: str = ""
    member: str = ""  # the writer
    digest: str = ""  # the new layout's digest
    previous: str = ""  # the digest it replaced ("" is the identity layout)
    namespaces: int = 0  # distinct namespace hashes it was built from
    knots: int = 0
    members: int = 0  # the members it was built for
    most_before: int = 0  # the most namespaces one member owned under the previous layout
    most_after: int = 0  # and under the new one


# ---------------------------------------------------------------------------------------------
# The OpenTelemetry sink (pycm.otel)
# ---------------------------------------------------------------------------------------------


@kind("otel.exported")
class SpansExported(Event):
    """The OpenTelemetry sink's counts since its previous report (tail sampling's result)."""

    spans_exported: int = 0
    traces_exported: int = 0
    traces_dropped: int = 0  # sampled out or evicted before their root ended
    spans_dropped: int = 0
    evicted: int = 0  # traces evicted from the bounded buffer (part of traces_dropped)
    pending_traces: int = 0


# ---------------------------------------------------------------------------------------------
# The bus itself
# ---------------------------------------------------------------------------------------------


@kind("bus.lagged")
class SubscriberLagged(Event):
    """A subscriber's bounded queue overflowed: it lost the ``lost`` oldest events."""

    subscriber: str = ""
    lost: int = 0
