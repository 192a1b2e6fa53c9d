"""The sink fed by a scripted bus: ids, tree shape, attributes, links, status, tail sampling."""

from __future__ import annotations

import contextvars

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from pycm.trace.context import _current
from pycm.trace.kinds import (
    ControllerInitBegan,
    FlagsParsed,
    InformersStarted,
    InformerSynced,
    LeaseAcquireAttempted,
    LeaseAcquired,
    LeaseRenewed,
    LeaseRenewFailed,
    ReconcileStarted,
    RenewFailureReason,
    ServingStarted,
    SpansExported,
    StartupBegan,
)
from tests.otel.conftest import Harness, make_harness
from tests.otel.scripts import api_call, reconcile


def _hex(n: int, width: int) -> str:
    return f"{n:0{width}x}"


def test_sink_reconcile_keeps_ids_tree_attributes_and_link() -> None:
    h = make_harness(ratio=1.0)
    trace_id, span_id = reconcile(h.bus, h.clock, trigger=("ab" * 16, "cd" * 8))
    spans = h.spans()
    assert len(spans) == 3
    root = spans[-1]
    assert root.name == "reconcile deployment"
    assert root.kind is SpanKind.INTERNAL
    assert root.context is not None
    assert _hex(root.context.trace_id, 32) == trace_id
    assert _hex(root.context.span_id, 16) == span_id
    assert root.parent is None
    attrs = dict(root.attributes or {})
    assert attrs["k8s.namespace.name"] == "default"
    assert attrs["k8s.deployment.name"] == "web"
    assert attrs["k8s.deployment.uid"] == "uid-1"
    assert attrs["pycm.controller"] == "deployment"
    assert attrs["pycm.queue.wait_ms"] == 3.5
    assert attrs["pycm.retries"] == 1
    assert attrs["pycm.result"] == "success"
    assert root.status.status_code is StatusCode.UNSET
    assert root.end_time is not None and root.start_time is not None
    assert root.end_time - root.start_time == 10_000_000
    (link,) = root.links
    assert _hex(link.context.trace_id, 32) == "ab" * 16
    assert _hex(link.context.span_id, 16) == "cd" * 8
    assert dict(link.attributes or {}) == {
        "pycm.trigger.event": "update",
        "pycm.trigger.kind": "ReplicaSet",
        "pycm.trigger.resource_version": "42",
    }
    for child in spans[:2]:
        assert child.kind is SpanKind.CLIENT
        assert child.parent is not None and child.context is not None
        assert child.parent.span_id == root.context.span_id
        assert child.context.trace_id == root.context.trace_id
        assert child.name == "GET replicasets"
        c = dict(child.attributes or {})
        assert c["http.request.method"] == "GET"
        assert c["server.address"] == "127.0.0.1"
        assert c["server.port"] == 6443
        assert c["http.response.status_code"] == 200
        assert c["k8s.namespace.name"] == "default"
        assert c["k8s.resource"] == "replicasets"
        assert child.start_time is not None and child.end_time is not None
        assert child.end_time - child.start_time == 2_000_000
        assert root.start_time <= child.start_time <= child.end_time <= root.end_time
    assert dict(root.resource.attributes)["service.instance.id"] == "test-replica"


def test_sink_failed_reconcile_is_exported_at_ratio_zero_with_error_status() -> None:
    h = make_harness(ratio=0.0)
    reconcile(h.bus, h.clock, fail="Conflict: the object has been modified")
    spans = h.spans()
    assert [s.name for s in spans] == ["GET replicasets", "GET replicasets", "reconcile deployment"]
    assert spans[-1].status.status_code is StatusCode.ERROR
    assert spans[-1].status.description == "Conflict: the object has been modified"
    assert h.metric("pycm_otel_traces_exported_total", reason="error") == 1


def test_sink_slow_reconcile_is_exported_at_ratio_zero() -> None:
    h = make_harness(ratio=0.0, slow=1.0)
    reconcile(h.bus, h.clock, seconds=1.5)
    assert len(h.spans()) == 3
    assert h.metric("pycm_otel_traces_exported_total", reason="slow") == 1


def test_sink_fast_reconcile_at_ratio_zero_drops_the_trace_and_its_children() -> None:
    h = make_harness(ratio=0.0)
    reconcile(h.bus, h.clock, seconds=0.01)
    assert h.spans() == []
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 1
    assert h.metric("pycm_otel_spans_dropped_total", reason="sampled_out") == 3
    assert h.metric("pycm_otel_spans_exported_total") == 0


def test_sink_ratio_is_honoured_statistically_and_children_follow_the_root() -> None:
    h = make_harness(ratio=0.25)
    n = 4000
    for _ in range(n):
        reconcile(h.bus, h.clock, calls=1, seconds=0.003)
    spans = h.spans()
    roots = [s for s in spans if s.parent is None]
    # Binomial(4000, 0.25): sd ~ 27; 5 sd either side.
    assert abs(len(roots) - n * 0.25) < 140
    kept = {s.context.trace_id for s in roots if s.context is not None}
    children = [s for s in spans if s.parent is not None]
    assert len(children) == len(roots)
    assert {s.context.trace_id for s in children if s.context is not None} == kept
    assert h.metric("pycm_otel_traces_exported_total", reason="sampled") == len(roots)
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == n - len(roots)


def test_sink_decision_is_deterministic_on_the_trace_id() -> None:
    a, b = make_harness(ratio=0.5), make_harness(ratio=0.5)
    ids = ["%032x" % (i * 0x9E3779B97F4A7C15 % (1 << 128)) for i in range(1, 200)]
    assert [a.sink.sampler.by_ratio(t) for t in ids] == [b.sink.sampler.by_ratio(t) for t in ids]
    assert a.sink.sampler.by_ratio("0" * 32) is True  # low bits 0 < bound
    assert make_harness(ratio=1.0).sink.sampler.by_ratio("f" * 32) is True
    assert make_harness(ratio=0.0).sink.sampler.by_ratio("0" * 31 + "1") is False


def test_sink_pending_traces_are_bounded_and_evictions_counted() -> None:
    h = make_harness(ratio=1.0, max_traces=2)

    def open_reconcile(i: int) -> None:
        # A reconcile that has made an API call and not ended yet (its own context each).
        h.bus.step(
            ReconcileStarted(controller="deployment", key=f"default/d{i}", resource="deployments")
        ).__enter__()
        api_call(h.bus, h.clock)

    for i in range(3):
        contextvars.copy_context().run(open_reconcile, i)
    h.pump()
    assert h.metric("pycm_otel_traces_dropped_total", reason="evicted") == 1
    assert h.metric("pycm_otel_spans_dropped_total", reason="evicted") == 1
    assert h.metric("pycm_otel_pending_traces") == 2


def test_sink_spans_per_trace_are_bounded() -> None:
    h = make_harness(ratio=1.0, max_spans_per_trace=3)
    reconcile(h.bus, h.clock, calls=5)
    spans = h.spans()
    assert len(spans) == 4  # 3 children + the root
    assert h.metric("pycm_otel_spans_dropped_total", reason="trace_full") == 2


def test_sink_startup_trace_has_the_expected_tree(harness: Harness) -> None:
    h = harness
    h.bus.emit(
        FlagsParsed(command="run", changed="kubeconfig=/home/me/.kube/config", changed_count=1)
    )
    with h.bus.step(StartupBegan(command="run", version="9.9.9")) as startup:
        api_call(h.bus, h.clock, verb="get", name="")  # /healthz
        h.bus.point(ServingStarted(address="127.0.0.1", port=10257))
        with h.bus.step(ControllerInitBegan(controller="deployment")) as init:
            init.finish(started=True)
        h.bus.point(LeaseAcquireAttempted(lease="kube-system/pycm", identity="me"))
        h.bus.point(LeaseAcquired(lease="kube-system/pycm", identity="me", waited_ms=5.0))
        h.bus.point(InformersStarted(informers=2))
        api_call(h.bus, h.clock, verb="update")  # a renew's PUT after start-up: not start-up's
    # Ends after the root (the elector's task keeps the start-up context).
    token = _current.set((startup.trace_id, startup.span_id))
    try:
        h.bus.point(InformerSynced(resource="pods", objects=3, duration_ms=12.0))
    finally:
        _current.reset(token)
    spans = h.spans()
    by_name = {s.name: s for s in spans}
    assert set(by_name) == {
        "pycm.startup",
        "flags.parsed",
        "GET replicasets",
        "server.serving_started",
        "controller.init deployment",
        "lease.acquire",
        "informers.started",
        "informer.synced",
    }
    root = by_name["pycm.startup"]
    assert root.parent is None and root.context is not None
    assert _hex(root.context.trace_id, 32) == startup.trace_id
    for name, span in by_name.items():
        assert span.context is not None and span.context.trace_id == root.context.trace_id
        if name != "pycm.startup":
            assert span.parent is not None and span.parent.span_id == root.context.span_id
    assert dict(by_name["flags.parsed"].attributes or {})["pycm.changed_flags"] == "kubeconfig"
    acquire = by_name["lease.acquire"]
    assert [e.name for e in acquire.events] == ["lease.acquire_attempt"]
    assert h.metric("pycm_otel_spans_dropped_total", reason="outside_step") == 1


def test_sink_lease_renews_are_spans_of_their_own_trace_linked_to_the_acquisition(
    harness: Harness,
) -> None:
    h = harness
    acquired = h.bus.point(LeaseAcquired(lease="kube-system/pycm", identity="me", waited_ms=1.0))
    ok = h.bus.point(LeaseRenewed(lease="kube-system/pycm", identity="me", latency_ms=4.0))
    failed = h.bus.point(
        LeaseRenewFailed(
            lease="kube-system/pycm",
            identity="me",
            reason=RenewFailureReason.CONFLICT,
            latency_ms=7.0,
            error="Conflict: lease changed",
        )
    )
    spans = {s.name + str(i): s for i, s in enumerate(h.spans())}
    acquire, renew, fail = spans["lease.acquire0"], spans["lease.renew1"], spans["lease.renew2"]
    # Untimed points outside any step carry no ids: the sink gives each span its own.
    assert not (acquired.span_id or ok.span_id or failed.span_id)
    assert acquire.context is not None
    span_ids = set()
    for span in (renew, fail):
        assert span.context is not None and span.parent is None
        span_ids.add(span.context.span_id)
        assert _hex(span.context.trace_id, 32) == "0" * 16 + _hex(span.context.span_id, 16)
        (link,) = span.links
        assert link.context.span_id == acquire.context.span_id
        assert link.context.trace_id == acquire.context.trace_id
    assert len(span_ids) == 2
    assert renew.end_time is not None and renew.start_time is not None
    assert renew.end_time - renew.start_time == 4_000_000
    assert dict(renew.attributes or {})["pycm.lease.outcome"] == "renewed"
    assert dict(fail.attributes or {})["pycm.reason"] == "conflict"
    assert fail.status.status_code is StatusCode.ERROR
    assert [e.name for e in fail.events] == ["lease.renew_failed"]


def test_sink_attributes_carry_no_env_value_or_object_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "s3cr3t-token-value"
    monkeypatch.setenv("PYCM_TEST_SECRET", secret)
    h = make_harness(ratio=1.0)
    h.bus.emit(FlagsParsed(command="run", changed=f"token={secret},kubeconfig=/x", changed_count=2))
    with h.bus.step(StartupBegan(command="run")):
        pass
    reconcile(h.bus, h.clock, fail='Invalid: {"spec":{"replicas":-1}}')
    for span in h.spans():
        values = [str(v) for v in (span.attributes or {}).values()]
        values += [str(v) for e in span.events for v in (e.attributes or {}).values()]
        values += [str(v) for ln in span.links for v in (ln.attributes or {}).values()]
        assert not any(secret in v for v in values), span.name
        assert not any('"spec"' in v for v in values), span.name


def test_sink_reports_counts_on_the_bus(harness: Harness) -> None:
    h = make_harness(ratio=0.0)
    reconcile(h.bus, h.clock, fail="boom")
    reconcile(h.bus, h.clock)
    h.pump()
    report = h.sink.report()
    assert isinstance(report, SpansExported)
    assert (report.spans_exported, report.traces_exported, report.traces_dropped) == (3, 1, 1)
    assert report.spans_dropped == 3
    assert h.sink.report() is None  # within the interval
    h.pump()  # the sink ignores its own report
    assert h.metric("pycm_otel_spans_exported_total") == 3


def test_sink_requests_outside_any_step_are_their_own_tail_sampled_traces() -> None:
    h = make_harness(ratio=0.0, slow=1.0)
    api_call(h.bus, h.clock, code=500, error="InternalError: boom")  # failed: kept
    api_call(h.bus, h.clock, code=200)  # ordinary: sampled out at ratio 0
    api_call(h.bus, h.clock, verb="watch", code=200, ms=60_000.0)  # long, but a watch
    spans = h.spans()
    assert [s.attributes["http.response.status_code"] for s in spans if s.attributes] == [500]
    assert spans[0].kind is SpanKind.CLIENT and spans[0].parent is None
    assert spans[0].status.status_code is StatusCode.ERROR
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 2


def test_sink_a_child_that_ends_after_its_root_follows_the_root_decision() -> None:
    for ratio, exported in ((1.0, 2), (0.0, 0)):
        h = make_harness(ratio=ratio)
        trace_id, span_id = reconcile(h.bus, h.clock, calls=0)
        h.pump()  # the root decided in a batch of its own, the child in the next one
        # A task started inside the reconcile finishes after it (its context kept the span).
        token = _current.set((trace_id, span_id))
        try:
            api_call(h.bus, h.clock)
        finally:
            _current.reset(token)
        assert len(h.spans()) == exported
        assert h.metric("pycm_otel_spans_dropped_total", reason="sampled_out") == 2 - exported
        assert h.metric("pycm_otel_pending_traces") == 0


def test_sink_remembers_decisions_for_two_generations(monkeypatch: pytest.MonkeyPatch) -> None:
    import pycm.otel.decisions as decisions_module

    monkeypatch.setattr(decisions_module, "MAX_DECIDED", 4)
    h = make_harness(ratio=0.0)
    roots = []
    # Dropped roots, a batch each: 0-3 and 4-7 fill a generation each, 8 and 9 start the third.
    for i in range(10):
        roots.append(reconcile(h.bus, h.clock, name=f"d{i}", calls=0))
        h.pump()

    def late_child(root: tuple[str, str]) -> None:
        token = _current.set(root)
        try:
            api_call(h.bus, h.clock)
        finally:
            _current.reset(token)
        h.pump()

    late_child(roots[9])  # the newest generation: dropped with its root
    late_child(roots[5])  # the older one: still remembered
    assert h.metric("pycm_otel_spans_dropped_total", reason="sampled_out") == 10 + 2
    assert h.metric("pycm_otel_pending_traces") == 0
    late_child(roots[0])  # forgotten: waits for a root that has come and gone
    assert h.metric("pycm_otel_pending_traces") == 1


def test_sink_builds_nothing_for_a_dropped_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    import pycm.otel.sink as sink_module

    built: list[str] = []
    real_api_span, real_step_span = sink_module.api_span, sink_module.step_span
    monkeypatch.setattr(sink_module, "api_span", lambda p: built.append("api") or real_api_span(p))
    monkeypatch.setattr(
        sink_module, "step_span", lambda b, e: built.append("step") or real_step_span(b, e)
    )
    h = make_harness(ratio=0.0)
    reconcile(h.bus, h.clock, calls=3)  # fast and ok: sampled out
    assert h.spans() == [] and built == []
    assert h.metric("pycm_otel_spans_dropped_total", reason="sampled_out") == 4
    reconcile(h.bus, h.clock, calls=3, fail="boom")  # kept at the tail: built then
    assert len(h.spans()) == 4
    assert sorted(built) == ["api", "api", "api", "step"]


def test_sink_open_steps_are_bounded_between_batches() -> None:
    h = make_harness(ratio=1.0, max_open=2)

    def begin(i: int) -> None:
        h.bus.step(
            ReconcileStarted(controller="deployment", key=f"default/d{i}", resource="deployments")
        ).__enter__()

    for i in range(3):
        contextvars.copy_context().run(begin, i)
    h.pump()
    assert len(h.sink._open) == 2
    assert h.metric("pycm_otel_spans_dropped_total", reason="unmatched") == 1
