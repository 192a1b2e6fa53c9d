"""A scripted, fully known event sequence for the TUI tests (and the README screenshot).

Two replicas, ``pycm-a`` and ``pycm-b``, campaign for ``kube-system/pycm``. ``pycm-a`` starts up
and leads; its renews fail twice (an API error, a timeout); it loses the lease to ``pycm-b``.
The deployment queue on ``pycm-b`` builds up to 40 and drains to 0; the pods informer relists
once after a watch error; two reconciles are slow (``default/slow-1`` 2.5 s, ``default/slow-2``
1.2 s) and one fails (``default/broken``). Every timestamp is fixed: now_ts is T0 + 60 s.
"""

from __future__ import annotations

from pycm.trace import Event
from pycm.trace import kinds as k
from pycm.trace.events import Outcome

T0 = 1_790_000_000 * 1_000_000_000  # 2026-09-21, fixed
S = 1_000_000_000
MS = 1_000_000
LEASE = "kube-system/pycm"
A, B = "pycm-a", "pycm-b"
NOW = T0 + 60 * S


class Script:
    """Stamps events with a per-instance seq and a given ts (as the bus would)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._seq: dict[str, int] = {}
        self._span = 0

    def add(self, event: Event, at_ns: int, instance: str) -> Event:
        seq = self._seq[instance] = self._seq.get(instance, 0) + 1
        object.__setattr__(event, "seq", seq)
        object.__setattr__(event, "ts", at_ns)
        object.__setattr__(event, "instance", instance)
        self.events.append(event)
        return event

    def span(self) -> tuple[str, str]:
        self._span += 1
        return f"{self._span:032x}", f"{self._span:016x}"

    def step(self, begin: k.StepBegin, end: k.StepEnd, start: int, dur: int, inst: str) -> None:
        trace_id, span_id = self.span()
        for ev in (begin, end):
            object.__setattr__(ev, "trace_id", trace_id)
            object.__setattr__(ev, "span_id", span_id)
        object.__setattr__(end, "dur_ns", dur)
        self.add(begin, start, inst)
        self.add(end, start + dur, inst)


def startup(s: Script, inst: str, t: int) -> None:
    trace_id, span_id = s.span()
    begin = k.StartupBegan(command="run", version="0.1.0", trace_id=trace_id, span_id=span_id)
    s.add(begin, t, inst)
    s.add(k.FlagsParsed(command="run", changed_count=3, dur_ns=2 * MS), t + 2 * MS, inst)
    s.add(k.ServingStarted(address="127.0.0.1", port=10257, dur_ns=30 * MS), t + 40 * MS, inst)
    s.step(
        k.InformerListBegan(resource="pods"),
        k.InformerListFinished(resource="pods", items=120, resource_version="1000"),
        t + 200 * MS,
        150 * MS,
        inst,
    )
    s.step(
        k.InformerListBegan(resource="deployments"),
        k.InformerListFinished(resource="deployments", items=7, resource_version="1000"),
        t + 200 * MS,
        40 * MS,
        inst,
    )
    s.add(k.InformerSynced(resource="pods", objects=120, duration_ms=160.0), t + 360 * MS, inst)
    s.add(k.InformerSynced(resource="deployments", objects=7, duration_ms=50.0), t + 360 * MS, inst)
    end = k.StartupFinished(
        controllers_started=2, trace_id=trace_id, span_id=span_id, dur_ns=400 * MS
    )
    s.add(end, t + 400 * MS, inst)


def build() -> list[Event]:
    s = Script()
    startup(s, A, T0)
    for inst, at in ((A, T0 + 100 * MS), (B, T0 + 1 * S)):
        # The electors' timings (KCM's defaults), which the lease gauge reads.
        configured = k.LeaderElectionConfigured(
            lease=LEASE, identity=inst, lease_duration_s=15.0, renew_deadline_s=10.0
        )
        s.add(configured, at, inst)
    s.add(
        k.LeaseAcquired(lease=LEASE, identity=A, transitions=4, waited_ms=100.0), T0 + 150 * MS, A
    )
    s.add(
        k.LeaseAcquireAttempted(
            lease=LEASE, identity=B, holder=A, result=k.AcquireResult.HELD_BY_OTHER
        ),
        T0 + 1 * S,
        B,
    )
    s.add(
        k.LeaderObserved(
            lease=LEASE,
            old_holder="",
            new_holder=A,
            transitions=4,
            lease_duration_s=15.0,
            skew_ms=12.0,
        ),
        T0 + 1 * S,
        B,
    )
    for i in range(1, 11):
        s.add(k.LeaseRenewed(lease=LEASE, identity=A, latency_ms=5.0 + i), T0 + 2 * i * S, A)
    s.add(
        k.LeaseRenewFailed(
            lease=LEASE,
            identity=A,
            reason=k.RenewFailureReason.API_ERROR,
            latency_ms=300.0,
            error="500",
        ),
        T0 + 22 * S,
        A,
    )
    s.add(
        k.LeaseRenewFailed(
            lease=LEASE,
            identity=A,
            reason=k.RenewFailureReason.TIMEOUT,
            latency_ms=5000.0,
            error="deadline",
        ),
        T0 + 27 * S,
        A,
    )
    s.add(k.LeaseLost(lease=LEASE, identity=A, reason="renew deadline passed"), T0 + 30 * S, A)
    s.add(
        k.LeaseAcquired(lease=LEASE, identity=B, transitions=5, waited_ms=29000.0), T0 + 31 * S, B
    )
    for i in range(1, 14):
        s.add(k.LeaseRenewed(lease=LEASE, identity=B, latency_ms=4.0), T0 + (31 + 2 * i) * S, B)

    # pycm-b's deployment queue: 40 adds, then 40 reconciles drain it.
    for i in range(40):
        s.add(
            k.ItemAdded(queue="deployment", key=f"default/web-{i}", depth=i + 1),
            T0 + 40 * S + i * MS,
            B,
        )
    s.add(k.ControllerStarted(controller="deployment", workers=5), T0 + 40 * S, B)
    for i in range(40):
        at = T0 + 41 * S + i * 100 * MS
        s.add(
            k.ItemTaken(queue="deployment", key=f"default/web-{i}", depth=39 - i, wait_ms=5.0),
            at,
            B,
        )
        s.step(
            k.ReconcileStarted(controller="deployment", key=f"default/web-{i}"),
            k.ReconcileFinished(
                controller="deployment", key=f"default/web-{i}", action="noop", api_calls=1
            ),
            at,
            20 * MS,
            B,
        )
        s.add(
            k.ItemDone(queue="deployment", key=f"default/web-{i}", depth=39 - i, work_ms=20.0),
            at + 21 * MS,
            B,
        )
    for key, dur in (("default/slow-1", 2500 * MS), ("default/slow-2", 1200 * MS)):
        s.step(
            k.ReconcileStarted(controller="deployment", key=key),
            k.ReconcileFinished(controller="deployment", key=key, action="scaled_up", api_calls=3),
            T0 + 50 * S,
            dur,
            B,
        )
    s.step(
        k.ReconcileStarted(controller="deployment", key="default/broken"),
        k.ReconcileFinished(
            controller="deployment",
            key="default/broken",
            outcome=Outcome.ERROR,
            error="conflict on update",
            result=k.ReconcileResult.ERROR,
            retries=2,
        ),
        T0 + 54 * S,
        30 * MS,
        B,
    )
    s.add(
        k.ItemRequeued(queue="deployment", key="default/broken", retries=3, delay_ms=20.0),
        T0 + 54 * S + 31 * MS,
        B,
    )

    # pycm-b's informers: synced, then a watch error and a relist of pods.
    s.add(k.InformerSynced(resource="pods", objects=120, duration_ms=90.0), T0 + 32 * S, B)
    s.add(k.InformerSynced(resource="deployments", objects=7, duration_ms=30.0), T0 + 32 * S, B)
    s.add(k.WatchOpened(resource="pods", resource_version="1000"), T0 + 33 * S, B)
    s.add(
        k.WatchClosed(
            resource="pods",
            reason=k.WatchCloseReason.ERROR,
            events=300,
            resource_version="1300",
            error="stream reset",
        ),
        T0 + 55 * S,
        B,
    )
    s.add(k.InformerRelisted(resource="pods", reason="watch error"), T0 + 56 * S, B)
    s.step(
        k.InformerListBegan(resource="pods"),
        k.InformerListFinished(resource="pods", items=125, resource_version="1342"),
        T0 + 56 * S,
        80 * MS,
        B,
    )
    s.add(k.WatchOpened(resource="pods", resource_version="1342"), T0 + 57 * S, B)
    s.add(k.LeaseRenewed(lease=LEASE, identity=B, latency_ms=4.0), NOW, B)
    return s.events
