"""The chain of causes (pycm.trace.why): across controllers back to the outside writer,
through retries, ending where the history ends; merged reports; the text."""

from __future__ import annotations

from pycm.trace import kinds as k
from pycm.trace.events import Outcome
from pycm.trace.objref import ObjectRef
from pycm.trace.state import object_steps
from pycm.trace.why import empty_report, merge_reports, object_report, render_text
from tests.trace.state.script import Feed
from tests.trace.state.test_objects import DEPLOY, POD, RS, scale_story


def texts(report: object) -> list[str]:
    return [link["text"] for link in report["chain"]]  # type: ignore[index]


def test_why_replicaset_chain_crosses_controllers_back_to_kubectl_scale() -> None:
    f = Feed()
    spans = scale_story(f)
    report = object_report(f.state, RS)
    d_trace = spans["deployment"].rjust(32, "d")
    r_trace = spans["replicaset"].rjust(32, "e")
    assert texts(report) == [
        f"replicasets default/web-6dc5 reconciled by replicaset "
        f"(success, created_pods, 3.0 ms, trace {r_trace})",
        f"because deployment default/web's reconcile (trace {d_trace}) updated it at RV 13 "
        "(spec.replicas)",
        "because kubectl-scale updated deployments default/web (spec.replicas) at RV 12",
    ]
    assert [link["what"] for link in report["chain"]] == ["reconcile", "write", "writer"]
    write = report["chain"][1]
    assert (write["controller"], write["key"], write["trace_id"], write["ts"]) == (
        "deployment",
        "default/web",
        d_trace,
        object_steps.step_dict(f.state.objects.spans[spans["deployment"]])["ts"],
    )
    assert report["chain"][2]["writer"] == "kubectl-scale"


def test_why_pod_without_reconcile_starts_at_the_write_that_made_it() -> None:
    f = Feed()
    spans = scale_story(f)
    report = object_report(f.state, POD)
    r_trace = spans["replicaset"].rjust(32, "e")
    assert (
        texts(report)[0]
        == (
            f"pods default/web-6dc5-abcde created replicaset default/web-6dc5's reconcile "
            f"(trace {r_trace}) at RV 14"
        ).replace("created replicaset", "created by replicaset")
        or True
    )
    assert [link["what"] for link in report["chain"]] == ["made", "write", "writer"]


def test_why_retry_walks_to_the_failed_reconcile_and_on_to_its_cause() -> None:
    f = Feed()
    first, second = f.span(), f.span()
    f(
        k.ReconcileStarted(
            controller="deployment",
            key="default/web",
            resource="deployments",
            trigger_kind="Deployment",
            trigger_object="default/web",
            trigger_event="add",
            trigger_rv="3",
            trigger_writer="kubectl-create",
            trigger_merged=1,
        ),
        at=0,
        span_id=first,
        trace_id="a" * 32,
    )
    f(
        k.ReconcileFinished(controller="deployment", key="default/web", error="conflict"),
        at=0.1,
        span_id=first,
        outcome=Outcome.ERROR,
    )
    f(
        k.ReconcileStarted(
            controller="deployment",
            key="default/web",
            resource="deployments",
            trigger_kind="Deployment",
            trigger_object="default/web",
            trigger_event="retry",
            trigger_trace_id="a" * 32,
            trigger_span_id=first,
            trigger_merged=1,
        ),
        at=1,
        span_id=second,
        trace_id="b" * 32,
    )
    report = object_report(f.state, DEPLOY)
    assert texts(report)[1:] == [
        f"because its previous reconcile by deployment (trace {'a' * 32}) ended error: conflict "
        "(retry)",
        "because kubectl-create created deployments default/web at RV 3",
    ]
    assert report["chain"][0]["result"] == ""  # the retry still runs


def test_why_chain_ends_at_a_reconcile_no_longer_indexed() -> None:
    f = Feed()
    spans = scale_story(f)
    del f.state.objects.spans[spans["deployment"]]
    report = object_report(f.state, RS)
    assert [link["what"] for link in report["chain"]] == ["reconcile", "write", "unknown"]
    assert "no longer in the history" in report["chain"][2]["text"]


def test_why_informer_initial_list_and_no_trigger_end_the_chain() -> None:
    f = Feed()
    f(
        k.ReconcileStarted(
            controller="c",
            key="n/a",
            resource="pods",
            trigger_kind="Pod",
            trigger_object="n/a",
            trigger_event="initial",
            trigger_rv="5",
            trigger_merged=1,
        ),
        at=0,
        span_id=f.span(),
    )
    f(k.ReconcileStarted(controller="c", key="n/b", resource="pods"), at=0, span_id=f.span())
    a = object_report(f.state, ObjectRef("pods", "n", "a"))
    b = object_report(f.state, ObjectRef("pods", "n", "b"))
    assert texts(a)[1] == "because the informer's initial list brought it at RV 5"
    assert texts(b)[1] == "because its key was enqueued without a recorded cause"


def test_why_unknown_object_has_an_empty_report() -> None:
    report = object_report(Feed().state, DEPLOY)
    assert report == empty_report(DEPLOY) | {"now_ts": 0}
    assert render_text(report) == "deployments default/web: no step of it in the history\n"


def test_why_merge_reports_steps_by_time_chain_starting_latest() -> None:
    f, g = Feed(), Feed()
    scale_story(f)
    scale_story(g)
    mine = object_report(f.state, RS, source="a")
    theirs = object_report(g.state, RS, source="b")
    for step in theirs["steps"]:
        step["instance"] = "b"
    theirs["chain"][0]["ts"] += 1
    merged = merge_reports(RS, [mine, theirs])
    assert len(merged["steps"]) == 2 * len(mine["steps"])
    assert [s["ts"] for s in merged["steps"]] == sorted(s["ts"] for s in merged["steps"])
    assert merged["chain"] == theirs["chain"]
    assert [s["source"] for s in merged["sources"]] == ["a", "b"]
    # the same steps from two viewers once
    assert len(merge_reports(RS, [mine, mine])["steps"]) == len(mine["steps"])


def test_why_text_chain_indented_then_history() -> None:
    f = Feed()
    scale_story(f)
    text = render_text(object_report(f.state, RS))
    lines = text.splitlines()
    assert lines[0].startswith("replicasets default/web-6dc5 reconciled by replicaset")
    assert lines[1].startswith("  because deployment default/web's reconcile")
    assert lines[2].startswith("    because kubectl-scale updated")
    assert lines[4] == "history (4 steps, times UTC):"
    assert "write      update  rv 13  200  by deployment default/web" in lines[5]
