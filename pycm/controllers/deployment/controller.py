"""The deployment controller (KCM deployment_controller.go): handlers and syncDeployment.

Handlers (key computation only, KCM's enqueue rules), declared on the
:class:`~pycm.controller.builder.ControllerBuilder` the descriptor's init hands it —
``for_(deployments, forget=…)``, ``controls(replicasets, …)`` (KCM's owner fan-out,
:mod:`pycm.controller.owner_events`) and ``handles(pods, on_delete=…)``:

- Deployment add/update/delete (tombstones unwrapped) → enqueue it; a delete, or an update
  whose UID changed (deleted and re-created between two events), also drops the old one's
  compiled selector and recorded writes.
- ReplicaSet add → its owning Deployment (Kind Deployment, name, UID must match); an orphan →
  every Deployment whose non-empty selector matches (one may adopt it); a ReplicaSet added
  while being deleted counts as a delete.
- ReplicaSet update (same resourceVersion: skipped) → the owner, and the old owner when the
  controller reference changed; an orphan whose labels or owner changed → matching Deployments.
- ReplicaSet delete → the owner.
- Pod delete → for a Recreate deployment, once none of its pods remain (the new ReplicaSet may
  be created only then).

syncDeployment(key): first the staleness guard (pycm's ``StaleControllerConsistencyDeployment``,
on by default; :mod:`~pycm.controllers.deployment.staleness`): while the ReplicaSet or Deployment
cache is older than this controller's own last writes for the deployment, the sync is skipped,
counted and requeued with backoff. Then: an empty selector → Warning SelectingAll,
observedGeneration bumped, stop; claim ReplicaSets (adopt after a live GET whose UID must
match, release non-matching); being deleted → status only; paused/resumed conditions; paused →
sync (scale, cleanup, status); the deprecated rollback annotation → roll back (rollback.py); a
scaling event → sync with proportional scaling; else the strategy (Recreate gets the pods
mapped by ReplicaSet: KCM maps them on every sync, but only Recreate reads the map).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pycm.api.labels import Selector, selector_from_dict
from pycm.api.meta import controller_ref, split_key
from pycm.api.meta import key as key_of
from pycm.controller.builder import ControllerBuilder
from pycm.controller.ref_manager import (
    ControllerRefManager,
    add_claim_index,
    claim_candidates,
)
from pycm.controller.worker import Result
from pycm.controllers.consistency import ConsistencyStore, StaleCache
from pycm.controllers.deployment import util
from pycm.controllers.deployment.context import DeploymentClient, Recorder, SyncContext
from pycm.controllers.deployment.recreate import rollout_recreate
from pycm.controllers.deployment.rollback import rollback, rollback_to
from pycm.controllers.deployment.rolling import rollout_rolling
from pycm.controllers.deployment.staleness import DEPLOYMENTS, REPLICASETS, RecordingClient
from pycm.controllers.deployment.sync import (
    get_all_replica_sets_and_sync_revision,
    is_scaling_event,
    sync,
    sync_deployment_status,
    update_status,
)
from pycm.kube import resources

__all__ = ["DeploymentController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _own_copy(cached: Obj) -> Obj:
    """The deployment a sync works on: copy on write instead of a deep copy. The top level,
    ``metadata`` and ``status`` are new dicts — the sync sets a status field, a condition list
    or the metadata in place — while everything below them stays the cache's, which the sync
    only reads or replaces whole (annotations, spec.template: see sync.py and rollback.py)."""
    d = dict(cached)
    d["metadata"] = dict(cached.get("metadata") or {})
    status = cached.get("status")
    if isinstance(status, dict):
        d["status"] = dict(status)
    return d


class DeploymentController:
    kind = "Deployment"
    api_version = "apps/v1"

    def __init__(
        self,
        builder: ControllerBuilder,
        *,
        client: DeploymentClient,
        recorder: Recorder,
        staleness_guard: bool = True,
        terminating_replicas: bool = True,
        pod_replacement_policy: bool = False,
    ) -> None:
        """Declare the controller's watches on ``builder`` and build its worker loop there
        (the descriptor's init hands it the manager's builder; tests and benches a
        :meth:`~pycm.controller.builder.ControllerBuilder.standalone` one)."""
        deployment_informer = builder.informer(resources.DEPLOYMENTS)
        rs_informer = builder.informer(resources.REPLICASETS)
        pod_informer = builder.informer(resources.PODS)
        # Gate DeploymentReplicaSetTerminatingReplicas (on in KCM 1.36).
        self.terminating_replicas = terminating_replicas
        self.pod_replacement_policy = pod_replacement_policy  # gate (off in KCM 1.36)
        # The staleness guard (None: off), reading the two informers it writes through.
        self.consistency: ConsistencyStore | None = None
        if staleness_guard:
            self.consistency = ConsistencyStore(
                {
                    DEPLOYMENTS: lambda: deployment_informer.store_resource_version,
                    REPLICASETS: lambda: rs_informer.store_resource_version,
                }
            )
        self.stale_skips: dict[str, int] = {}  # resource -> syncs skipped
        self._clock = builder.context.clock
        self.client = client
        self.recorder = recorder
        self.informers = (deployment_informer, rs_informer, pod_informer)
        self.d_lister = deployment_informer.lister
        self.rs_lister = rs_informer.lister
        self.pod_lister = pod_informer.lister
        self._d_indexer = deployment_informer.indexer
        self._rs_indexer = rs_informer.indexer
        add_claim_index(self._rs_indexer)
        # Compiled selectors by deployment key, with the selector dict they were compiled
        # from (see _selector); an entry goes when its deployment is deleted.
        self._selectors: dict[str, tuple[Any, Selector]] = {}
        # The handlers: KCM's rules (see the module docstring), declared on the builder.
        builder.for_(resources.DEPLOYMENTS, forget=self._forget).controls(
            resources.REPLICASETS, adopters=self._deployments_for_rs
        ).handles(resources.PODS, on_delete=self._pod_deleted)
        self._builder = builder
        self.controller = builder.build(self.sync)

    async def run(self, workers: int) -> None:
        await self._builder.run(workers)

    # -- what the handlers ask ----------------------------------------------------------------

    def _forget(self, key: str, d: Obj) -> None:
        """A deployment is gone (or re-created): its compiled selector and writes with it."""
        self._selectors.pop(key, None)
        if self.consistency is not None:
            self.consistency.clear(key, str(_meta(d).get("uid", "")))

    def _resolve(self, namespace: str, ref: Mapping[str, Any] | None) -> Obj | None:
        if ref is None or ref.get("kind") != self.kind:
            return None
        d = self.d_lister.get(namespace, str(ref.get("name", "")))
        if d is None or _meta(d).get("uid") != ref.get("uid"):
            return None
        return d

    def _deployments_for_rs(self, rs: Obj) -> list[Obj]:
        """The deployments that may adopt an orphan ReplicaSet (KCM's
        getDeploymentsForReplicaSet: a non-empty selector matching its labels)."""
        labels = _meta(rs).get("labels") or {}
        if not labels:
            return []
        out = []
        for d in self.d_lister.list(_meta(rs).get("namespace")):
            try:
                selector = self._selector(d)
            except ValueError:
                continue
            if not selector.empty and selector.matches(labels):
                out.append(d)
        return out

    def _pod_deleted(self, pod: Obj) -> tuple[str, ...]:
        """KCM's deletePod: a Recreate deployment waits for its old pods to go before it
        creates the new ReplicaSet, so the last one's deletion enqueues it."""
        namespace = _meta(pod).get("namespace", "")
        rs_ref = controller_ref(pod)
        if rs_ref is None or rs_ref.get("kind") != "ReplicaSet":
            return ()
        rs = self.rs_lister.get(namespace, str(rs_ref.get("name", "")))
        if rs is None or _meta(rs).get("uid") != rs_ref.get("uid"):
            return ()
        d = self._resolve(namespace, controller_ref(rs))
        if d is None or util.is_rolling_update(d):
            return ()
        owned = {
            _meta(r).get("uid")
            for r in self.rs_lister.list(namespace)
            if (controller_ref(r) or {}).get("uid") == _meta(d).get("uid")
        }
        remaining = [
            p
            for p in self.pod_lister.list(namespace)
            if (controller_ref(p) or {}).get("uid") in owned
        ]
        return () if remaining else (key_of(d),)

    # -- sync ---------------------------------------------------------------------------------

    async def sync(self, key: str) -> Result:
        split_key(key)  # a malformed key fails here, as the lister's lookup would
        consistency = self.consistency
        if consistency is not None:
            try:
                consistency.ensure_ready(key)
            except StaleCache as stale:
                self.stale_skips[stale.resource] = self.stale_skips.get(stale.resource, 0) + 1
                log.info("deployment %s is not ready for reconciliation: %s", key, stale)
                return Result(requeue=True, action="stale_cache")
        cached = self._d_indexer.get_by_key(key)
        if cached is None:
            if consistency is not None:
                consistency.clear(key)
            return Result(action="deleted")
        d = _own_copy(cached)
        client: DeploymentClient = self.client
        if consistency is not None:
            client = RecordingClient(client, consistency, key, str(_meta(d).get("uid", "")))
        ctx = SyncContext(
            client,
            self.recorder,
            self._clock,
            self.rs_lister,
            terminating_replicas=self.terminating_replicas,
            pod_replacement_policy=self.pod_replacement_policy,
        )
        await self.sync_deployment(ctx, d)
        uid = str(_meta(d).get("uid", ""))
        if ctx.requeue_after is not None:
            return Result(requeue_after=ctx.requeue_after, action=ctx.action(), uid=uid)
        return Result(requeue=ctx.requeue, action=ctx.action(), uid=uid)

    async def sync_deployment(self, ctx: SyncContext, d: Obj) -> None:
        spec = d.get("spec") or {}
        selector_spec = spec.get("selector")
        if not selector_spec or (
            not selector_spec.get("matchLabels") and not selector_spec.get("matchExpressions")
        ):
            self.recorder.event(
                d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            status = d.setdefault("status", {})
            generation = int(_meta(d).get("generation") or 0)
            if int(status.get("observedGeneration") or 0) < generation:
                status["observedGeneration"] = generation
                await update_status(ctx, d)
            return
        rs_list = await self._claim_replica_sets(d)
        if _meta(d).get("deletionTimestamp"):
            new_rs, old_rss = await get_all_replica_sets_and_sync_revision(ctx, d, rs_list, False)
            await sync_deployment_status(ctx, [*old_rss, new_rs], new_rs, d)
            return
        await self._check_paused_conditions(ctx, d)
        if spec.get("paused"):
            await sync(ctx, d, rs_list)
            return
        # Before any scaling: a pending rollback must be cleared before RSs are touched.
        if rollback_to(d) is not None:
            await rollback(ctx, d, rs_list)
            return
        if await is_scaling_event(ctx, d, rs_list):
            await sync(ctx, d, rs_list)
            return
        if util.is_rolling_update(d):
            await rollout_rolling(ctx, d, rs_list)
        elif (spec.get("strategy") or {}).get("type") == "Recreate":
            # KCM builds the pod map before the deletion check; only Recreate reads it, so
            # it is built here, from the same cache, and nowhere else.
            await rollout_recreate(ctx, d, rs_list, self._pod_map(d, rs_list))
        else:
            raise ValueError(f"unexpected deployment strategy type: {spec.get('strategy')}")

    def _selector(self, d: Obj, key: str | None = None) -> Selector:
        """The deployment's compiled selector, compiled once per selector object: cached
        objects are never changed in place, so the same dict means the same selector, and an
        updated deployment brings a new dict (``is``, not ``==``, decides). ``key``: the
        deployment's, when the caller has it."""
        spec = (d.get("spec") or {}).get("selector")
        if key is None:
            key = key_of(d)
        entry = self._selectors.get(key)
        if entry is not None and entry[0] is spec:
            return entry[1]
        selector = selector_from_dict(spec)
        self._selectors[key] = (spec, selector)
        return selector

    async def _claim_replica_sets(self, d: Obj) -> list[Obj]:
        """KCM's claim over the namespace's ReplicaSets; the ones another controller owns
        are left out up front (the claim would skip them), see ref_manager."""
        key = key_of(d)
        namespace, name = split_key(key)
        selector = self._selector(d, key)

        async def fresh() -> Obj:
            return await self.client.get_deployment(namespace, name)

        async def patch(rs: Obj, body: Obj) -> Obj:
            return await self.client.patch_replica_set(namespace, rs["metadata"]["name"], body)

        manager = ControllerRefManager(
            d,
            kind=self.kind,
            api_version=self.api_version,
            selector=selector,
            patch=patch,
            fresh_owner=fresh,
        )
        candidates = claim_candidates(self._rs_indexer, namespace, str(_meta(d).get("uid") or ""))
        result = await manager.claim(candidates)
        if result.errors:
            raise result.errors[0]
        return result.claimed

    def _pod_map(self, d: Obj, rs_list: list[Obj]) -> dict[str, list[Obj]]:
        selector = self._selector(d)
        pod_map: dict[str, list[Obj]] = {str(_meta(rs).get("uid")): [] for rs in rs_list}
        for pod in self.pod_lister.list(_meta(d).get("namespace"), selector):
            ref = controller_ref(pod)
            if ref is not None and ref.get("uid") in pod_map:
                pod_map[str(ref["uid"])].append(pod)
        return pod_map

    async def _check_paused_conditions(self, ctx: SyncContext, d: Obj) -> None:
        if not util.has_progress_deadline(d):
            return
        status = d.setdefault("status", {})
        condition = util.get_condition(status, util.PROGRESSING)
        if condition is not None and condition.get("reason") == util.TIMED_OUT:
            return  # a timed-out rollout stays so until it progresses
        paused_exists = condition is not None and condition.get("reason") == util.PAUSED
        paused = bool((d.get("spec") or {}).get("paused"))
        if paused and not paused_exists:
            util.set_condition(
                status,
                util.new_condition(
                    util.PROGRESSING, "Unknown", util.PAUSED, "Deployment is paused", ctx.now()
                ),
            )
        elif not paused and paused_exists:
            util.set_condition(
                status,
                util.new_condition(
                    util.PROGRESSING, "Unknown", util.RESUMED, "Deployment is resumed", ctx.now()
                ),
            )
        else:
            return
        await update_status(ctx, d)
