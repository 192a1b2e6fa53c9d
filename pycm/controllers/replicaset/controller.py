"""The ReplicaSet controller (KCM pkg/controller/replicaset), on pycm's machinery.

Handlers (synchronous, key computation only), declared on the
:class:`~pycm.controller.builder.ControllerBuilder` the descriptor's init hands it —
``for_(replicasets, forget=…)`` and ``controls(pods, …)``, KCM's owner fan-out
(:mod:`pycm.controller.owner_events`):

- ReplicaSet add/update/delete → enqueue it (a delete, or an update whose UID changed, also
  forgets the old one's expectations and writes).
- Pod add → its owning ReplicaSet (observing one expected creation); an orphan → every
  ReplicaSet whose selector matches it (one of them may adopt it). A pod added already being
  deleted counts as a delete.
- Pod update (same resourceVersion: skipped; being deleted: a delete, of the old labels too
  when they changed) → the owner; the old owner too when the controller reference changed; an orphan
  whose labels changed → the matching ReplicaSets; a pod that just turned Ready with
  minReadySeconds → the owner again after minReadySeconds + 1 s.
- Pod delete (tombstones included) → the owner, observing one expected deletion.

syncReplicaSet(key): first the staleness guard (KCM 1.36, ``StaleControllerConsistencyReplicaSet``,
on by default): while the pod or ReplicaSet cache is older than this controller's own last writes
for the ReplicaSet (pods it created or patched, the status it wrote), the sync is skipped,
counted (``replicaset_controller_stale_sync_skips_total``) and requeued with backoff
(:mod:`pycm.controllers.consistency`). Then read it from the cache (gone → forget expectations
and writes); claim the active pods
(adopt matching orphans after a live check, release non-matching); if expectations are
satisfied and it is not being deleted, manage replicas — create the missing pods in slow-start
batches (1, 2, 4 …, at most burstReplicas, stopping at the first failed batch; skipped creations
lower the expectations) or delete the surplus by rank; write the status if it changed; requeue
after minReadySeconds while ready pods are not yet available.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from pycm.api.labels import Selector, selector_from_dict
from pycm.api.meta import controller_ref, split_key
from pycm.api.meta import key as key_of
from pycm.api.owner import new_controller_ref
from pycm.cache.indexer import CONTROLLER_UID_INDEX
from pycm.controller.builder import ControllerBuilder
from pycm.controller.expectations import EXPECTATIONS_TIMEOUT, UIDTrackingExpectations
from pycm.controller.pod_control import PodControl, Recorder
from pycm.controller.ref_manager import ControllerRefManager
from pycm.controller.worker import Result
from pycm.controllers.consistency import ConsistencyStore, StaleCache
from pycm.controllers.replicaset.metrics import ReplicaSetMetrics
from pycm.controllers.replicaset.pods import (
    is_pod_active,
    is_pod_ready,
    is_pod_terminating,
    slow_start_batch,
)
from pycm.controllers.replicaset.ranking import deletion_age_ratios, pods_to_delete
from pycm.controllers.replicaset.status import calculate_status, status_unchanged
from pycm.kube import resources
from pycm.kube.errors import is_not_found

__all__ = ["BURST_REPLICAS", "ReplicaSetClient", "ReplicaSetController"]

log = logging.getLogger(__name__)

BURST_REPLICAS = 500
SLOW_START_INITIAL_BATCH_SIZE = 1
STATUS_UPDATE_RETRIES = 1
# The staleness guard's names of the caches it reads.
PODS = "pods"
REPLICASETS = "replicasets.apps"

Obj = dict[str, Any]


class ReplicaSetClient(Protocol):
    """The API calls the controller makes (an adapter over pycm.kube.Client provides them)."""

    async def create_pod(self, namespace: str, body: Obj) -> Obj: ...

    async def delete_pod(self, namespace: str, name: str) -> None: ...

    async def patch_pod(self, namespace: str, name: str, patch: Obj) -> Obj: ...

    async def get_replica_set(self, namespace: str, name: str) -> Obj: ...

    async def update_replica_set_status(self, namespace: str, body: Obj) -> Obj: ...


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


class ReplicaSetController:
    kind = "ReplicaSet"
    api_version = "apps/v1"

    def __init__(
        self,
        builder: ControllerBuilder,
        *,
        client: ReplicaSetClient,
        recorder: Recorder,
        burst_replicas: int = BURST_REPLICAS,
        staleness_guard: bool = True,
        rs_metrics: ReplicaSetMetrics | None = None,
        expectations_timeout: float = EXPECTATIONS_TIMEOUT,
        pod_deletion_cost: bool = True,
        terminating_replicas: bool = True,
    ) -> None:
        """Declare the controller's watches on ``builder`` and build its worker loop there
        (the descriptor's init hands it the manager's builder; tests and benches a
        :meth:`~pycm.controller.builder.ControllerBuilder.standalone` one)."""
        self._clock = clock = builder.context.clock
        self.client = client
        self.recorder = recorder
        self.burst_replicas = burst_replicas
        # Feature gates (KCM 1.36 defaults): PodDeletionCost ranks by the annotation;
        # DeploymentReplicaSetTerminatingReplicas writes status.terminatingReplicas.
        self.pod_deletion_cost = pod_deletion_cost
        self.terminating_replicas = terminating_replicas
        self.rs_informer = rs_informer = builder.informer(resources.REPLICASETS)
        self.pod_informer = pod_informer = builder.informer(resources.PODS)
        self.rs_lister = rs_informer.lister
        self.pod_lister = pod_informer.lister
        self.expectations = UIDTrackingExpectations(clock, timeout=expectations_timeout)
        # The staleness guard (None: off). The stores it reads are the two informers'.
        self.consistency: ConsistencyStore | None = None
        if staleness_guard:
            self.consistency = ConsistencyStore(
                {
                    PODS: lambda: pod_informer.store_resource_version,
                    REPLICASETS: lambda: rs_informer.store_resource_version,
                }
            )
        self.rs_metrics = rs_metrics
        self.stale_skips: dict[str, int] = {}  # resource -> syncs skipped (also the metric)
        self.pod_control = PodControl(client, recorder)
        # The handlers: KCM's rules (see the module docstring), declared on the builder.
        builder.for_(resources.REPLICASETS, forget=self._forget).controls(
            resources.PODS,
            adopters=self._matching_replica_sets,
            expectations=self.expectations,
            after_update=self._ready_recheck,
        )
        self._builder = builder
        self.controller = builder.build(self.sync)

    async def run(self, workers: int) -> None:
        await self._builder.run(workers)

    # -- what the handlers ask ----------------------------------------------------------------

    def _forget(self, key: str, rs: Obj) -> None:
        """A ReplicaSet is gone (or re-created): its expectations and writes with it."""
        self.expectations.delete(key)
        if self.consistency is not None:
            self.consistency.clear(key, _uid(rs))

    def _matching_replica_sets(self, pod: Obj) -> list[Obj]:
        """The ReplicaSets that may adopt an orphan pod (KCM's getPodReplicaSets)."""
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        pod_labels = _labels(pod)
        out = []
        for rs in self.rs_lister.list(namespace):
            selector_spec = (rs.get("spec") or {}).get("selector")
            try:
                selector = selector_from_dict(selector_spec)
            except ValueError:
                continue
            if not selector.empty and selector.matches(pod_labels):
                out.append(rs)
        return out

    @staticmethod
    def _ready_recheck(rs: Obj, old: Obj, cur: Obj) -> float | None:
        """A pod that just turned Ready under minReadySeconds: its ReplicaSet again once it
        may count as available (KCM's updatePod: minReadySeconds + 1 s)."""
        min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
            return min_ready + 1.0
        return None

    # -- sync ---------------------------------------------------------------------------------

    async def sync(self, key: str) -> Result:
        if self.consistency is not None:
            try:
                self.consistency.ensure_ready(key)
            except StaleCache as stale:
                self._skipped(key, stale)
                return Result(requeue=True, action="stale_cache")
        namespace, name = split_key(key)
        rs = self.rs_lister.get(namespace, name)
        if rs is None:
            self.expectations.delete(key)
            if self.consistency is not None:
                self.consistency.clear(key)
            return Result(action="deleted")
        needs_sync = self.expectations.satisfied(key)
        try:
            selector = selector_from_dict((rs.get("spec") or {}).get("selector"))
        except ValueError as exc:
            log.error("replicaset %s has an invalid selector: %s", key, exc)
            return Result(action="invalid_selector")
        pods = self.pod_lister.list(namespace)
        active = [p for p in pods if is_pod_active(p)]
        claimed = await self._claim_pods(rs, selector, active)
        terminating: int | None = None
        if self.terminating_replicas:
            # FilterTerminatingPods then FilterClaimedPods: controlled by this ReplicaSet and
            # still matching its selector (terminating pods are never adopted or released).
            uid = _uid(rs)
            terminating = sum(
                1
                for p in pods
                if is_pod_terminating(p)
                and (controller_ref(p) or {}).get("uid") == uid
                and selector.matches(_labels(p))
            )
        manage_error: BaseException | None = None
        diff = len(claimed) - int((rs.get("spec") or {}).get("replicas", 1))
        action = "noop"
        if needs_sync and not (rs.get("metadata") or {}).get("deletionTimestamp"):
            manage_error, action = await self._manage_replicas(claimed, rs, key)
        now = self._clock.wall_ns() / 1e9
        status = calculate_status(rs, claimed, manage_error, diff, now, terminating)
        updated = await self._update_status(rs, status)
        if updated is not rs and action == "noop":
            action = "status_updated"
        if manage_error is not None:
            raise manage_error
        spec = updated.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        new_status = updated.get("status") or {}
        replicas = int(spec.get("replicas", 1))
        if (
            min_ready > 0
            and int(new_status.get("readyReplicas") or 0) == replicas
            and int(new_status.get("availableReplicas") or 0) != replicas
        ):
            return Result(requeue_after=float(min_ready), action=action, uid=_uid(rs))
        return Result(action=action, uid=_uid(rs))

    def _skipped(self, key: str, stale: StaleCache) -> None:
        self.stale_skips[stale.resource] = self.stale_skips.get(stale.resource, 0) + 1
        if self.rs_metrics is not None:
            resource, _, group = stale.resource.partition(".")
            self.rs_metrics.stale_sync_skips_total.labels(group, resource).inc()
        log.info("replicaset %s is not ready for reconciliation: %s", key, stale)

    def _wrote(self, rs: Obj, resource: str, written: Any) -> None:
        """Remember a write made for ``rs`` (what the staleness guard waits for)."""
        if self.consistency is not None and isinstance(written, dict):
            self.consistency.wrote_at(key_of(rs), _uid(rs), resource, _rv(written))

    async def _claim_pods(self, rs: Obj, selector: Selector, pods: list[Obj]) -> list[Obj]:
        namespace, name = split_key(key_of(rs))

        async def fresh() -> Obj:
            return await self.client.get_replica_set(namespace, name)

        async def patch(pod: Obj, body: Obj) -> Obj:
            patched = await self.client.patch_pod(namespace, pod["metadata"]["name"], body)
            self._wrote(rs, PODS, patched)
            return patched

        manager = ControllerRefManager(
            rs,
            kind=self.kind,
            api_version=self.api_version,
            selector=selector,
            patch=patch,
            fresh_owner=fresh,
        )
        result = await manager.claim(pods)
        if result.errors:
            raise result.errors[0]
        return result.claimed

    async def _manage_replicas(
        self, pods: list[Obj], rs: Obj, key: str
    ) -> tuple[BaseException | None, str]:
        namespace = (rs.get("metadata") or {}).get("namespace", "")
        diff = len(pods) - int((rs.get("spec") or {}).get("replicas", 1))
        if diff < 0:
            want = min(-diff, self.burst_replicas)
            self.expectations.expect_creations(key, want)
            template = (rs.get("spec") or {}).get("template") or {}
            ref = new_controller_ref(rs, self.kind, self.api_version)

            async def create() -> None:
                created = await self.pod_control.create_pods(namespace, template, rs, ref)
                self._wrote(rs, PODS, created)

            created, error = await slow_start_batch(want, SLOW_START_INITIAL_BATCH_SIZE, create)
            skipped = want - created
            if skipped:
                # The creations that never happened will never be observed.
                self.expectations.lower(key, add=skipped)
            return error, "created_pods" if created else "noop"
        if diff > 0:
            count = min(diff, self.burst_replicas)
            related = self._related_pods(rs)
            now_ns = self._clock.wall_ns()
            victims = pods_to_delete(
                pods, related, count, now_ns=now_ns, pod_deletion_cost=self.pod_deletion_cost
            )
            if count < len(pods) and self.rs_metrics is not None:  # only a sorted choice
                for ratio in deletion_age_ratios(pods, victims, now_ns):
                    self.rs_metrics.sorting_deletion_age_ratio.observe(ratio)
            self.expectations.expect_deletions_of(key, [key_of(p) for p in victims])
            first_error: BaseException | None = None
            for pod in victims:
                pod_key = key_of(pod)
                try:
                    await self.pod_control.delete_pod(namespace, pod["metadata"]["name"], rs)
                except Exception as exc:
                    # The deletion will not be observed: stop expecting it.
                    self.expectations.deletion_observed_uid(key, pod_key)
                    if not is_not_found(exc) and first_error is None:
                        first_error = exc
            return first_error, "deleted_pods"
        return None, "noop"

    def _related_pods(self, rs: Obj) -> list[Obj]:
        """Pods of every ReplicaSet with the same controller as ``rs`` (or of ``rs`` alone)."""
        ref = controller_ref(rs)
        namespace = (rs.get("metadata") or {}).get("namespace", "")
        owners = [rs]
        if ref is not None:
            owners = [
                other
                for other in self.rs_lister.list(namespace)
                if (controller_ref(other) or {}).get("uid") == ref.get("uid")
            ]
        indexer = self.pod_informer.indexer
        pods: list[Obj] = []
        for owner in owners:
            pods.extend(indexer.by_index(CONTROLLER_UID_INDEX, _uid(owner)))
        return pods

    async def _update_status(self, rs: Obj, status: dict[str, Any]) -> Obj:
        if status_unchanged(rs, status):
            return rs
        namespace, name = split_key(key_of(rs))
        current = rs
        for attempt in range(STATUS_UPDATE_RETRIES + 1):
            generation = (current.get("metadata") or {}).get("generation", 0)
            body = {**current, "status": {**status, "observedGeneration": generation}}
            try:
                updated = await self.client.update_replica_set_status(namespace, body)
                self._wrote(rs, REPLICASETS, updated)
                return updated
            except Exception:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
            current = await self.client.get_replica_set(namespace, name)
        return current  # unreachable: the loop returns or raises


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))
