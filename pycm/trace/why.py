"""Why did it run: an object's chain of causes, built from its history (shared by ``pycm why``,
``GET /debug/pycm/objects/...``, ``pycm top`` and the dashboard).

The chain starts at the object's newest reconcile (else its newest write, event or watch
event) and walks back: each reconcile names its trigger (``ReconcileStarted.trigger_*``, kept in
the object's history, :mod:`pycm.trace.state.objects`); a trigger written by a reconcile of this
manager names that reconcile's span, which the state's reconcile index finds, and whose own
trigger is the next link — across controllers — until an outside writer (the managedFields
manager: ``kubectl-scale``), the informer itself (initial list, relist, resync), a key enqueued
without a cause, or a reconcile no longer indexed ("unknown"). At most :data:`MAX_LINKS` links;
a loop (a span seen twice) ends the chain.

Everything here is pure: :func:`build_chain` takes the history and a span look-up;
:func:`object_report` reads a :class:`~pycm.trace.state.State`; :func:`merge_reports` joins
the reports of several managers (replicas): their steps by time, and the chain of the one whose
chain starts latest; :func:`render_text` is ``pycm why``'s text.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Annotated, TypedDict

from pycm.trace.objref import ObjectRef, resource_of_kind
from pycm.trace.state.object_steps import OKEY, ObjectHistorySnapshot, ObjectStepSnapshot

if TYPE_CHECKING:
    from pycm.trace.state import State

__all__ = [
    "MAX_LINKS",
    "CauseSnapshot",
    "ObjectReport",
    "SourceReport",
    "build_chain",
    "empty_report",
    "find_object",
    "merge_reports",
    "object_of_event",
    "object_report",
    "render_text",
]

MAX_LINKS = 16

SpanLookup = Callable[[str], ObjectStepSnapshot | None]

_EVENT_PAST = {"add": "created", "update": "updated", "delete": "deleted"}
_VERB_PAST = {"create": "created", "update": "updated", "patch": "patched", "delete": "deleted"}
_INFORMER = {
    "initial": "the informer's initial list brought",
    "relist": "a relist of the informer brought",
    "resync": "a resync of the informer redelivered",
}
_REQUEUE = frozenset({"retry", "requeue", "requeue_after"})


class CauseSnapshot(TypedDict):
    """One link of a chain of causes (unused fields are "" or 0)."""

    what: Annotated[
        str,
        "reconcile (the object's reconcile the chain starts at), made (the reconcile "
        "that wrote the object, when it has none of its own), write (a reconcile of this "
        "manager wrote the triggering object), requeue (a retry or requeue of the previous "
        "reconcile), writer (an outside writer), informer (initial list, relist, resync), "
        "none (enqueued without a cause), unknown (a reconcile no longer in the history)",
    ]
    text: Annotated[str, "the line pycm why prints"]
    ts: Annotated[int, "when the reconcile this link names began (Unix ns; 0 unknown)"]
    instance: Annotated[str, "its instance"]
    controller: Annotated[str, "the controller of the reconcile this link names"]
    key: Annotated[str, "its key"]
    trace_id: Annotated[str, "its trace"]
    span_id: Annotated[str, "its span"]
    result: Annotated[str, "its result"]
    action: Annotated[str, "its action"]
    error: Annotated[str, "its error"]
    dur_ns: Annotated[int, "its duration"]
    event: Annotated[str, "the triggering event (add, update, delete, initial, retry, ...)"]
    resource: Annotated[str, "the triggering object's resource"]
    object: Annotated[str, "its namespace/name"]
    rv: Annotated[str, "its resourceVersion in the event"]
    paths: Annotated[str, "an update's changed field paths"]
    writer: Annotated[str, "the outside writer (what: writer)"]
    verb: Annotated[str, "the verb of this manager's write (what: write, made)"]


class SourceReport(TypedDict):
    """Where a report came from (a manager, a recording) and whether it answered."""

    source: Annotated[str, "the --server URL or the recording"]
    error: Annotated[str, '"" when it answered']


class ObjectReport(TypedDict):
    """One object's history and chain of causes: ``GET /debug/pycm/objects/...``'s body and
    ``pycm why -o json``'s output."""

    resource: Annotated[str, "the object's resource"]
    namespace: Annotated[str, '"" when cluster-scoped']
    name: Annotated[str, "its name"]
    now_ts: Annotated[int, "the newest event time the answering states had seen (Unix ns)"]
    steps: Annotated[list[ObjectStepSnapshot], "the steps that touched it, oldest first"]
    dropped: Annotated[int, "older steps dropped by the bounds"]
    chain: Annotated[list[CauseSnapshot], "why its newest step happened, newest cause first"]
    sources: Annotated[list[SourceReport], "who answered (pycm why; the route: this manager)"]


def _short(trace_id: str) -> str:
    return trace_id or "?"


def _obj_text(resource: str, obj: str) -> str:
    return f"{resource} {obj}".strip()


def _start_line(step: ObjectStepSnapshot, ref: ObjectRef) -> CauseSnapshot:
    result = step["result"] or "running"
    details = [result]
    if step["action"]:
        details.append(step["action"])
    if step["result"]:
        details.append(f"{step['dur_ns'] / 1e6:.1f} ms")
    if step["error"]:
        details.append(step["error"])
    details.append(f"trace {_short(step['trace_id'])}")
    text = f"{ref} reconciled by {step['controller']} ({', '.join(details)})"
    return _link("reconcile", text, step)


def _link(what: str, text: str, step: ObjectStepSnapshot | None, **cause: str) -> CauseSnapshot:
    out: CauseSnapshot = {
        "what": what,
        "text": text,
        "ts": 0,
        "instance": "",
        "controller": "",
        "key": "",
        "trace_id": "",
        "span_id": "",
        "result": "",
        "action": "",
        "error": "",
        "dur_ns": 0,
        "event": "",
        "resource": "",
        "object": "",
        "rv": "",
        "paths": "",
        "writer": "",
        "verb": "",
    }
    if step is not None and step["step"] == "reconcile":
        out["ts"] = step["ts"]
        out["instance"] = step["instance"]
        out["controller"] = step["controller"]
        out["key"] = step["key"]
        out["trace_id"] = step["trace_id"]
        out["span_id"] = step["span_id"]
        out["result"] = step["result"]
        out["action"] = step["action"]
        out["error"] = step["error"]
        out["dur_ns"] = step["dur_ns"]
    out.update(cause)  # type: ignore[typeddict-item]
    return out


def _cause(
    step: ObjectStepSnapshot, ref: ObjectRef | None, find: SpanLookup
) -> tuple[CauseSnapshot, ObjectStepSnapshot | None, str]:
    """The cause of ``step`` (a reconcile or watch step's trigger fields): its line, the
    reconcile it names (if indexed) and that reconcile's span id ("" when the chain ends).
    The triggering object is "it" when it is ``ref`` (the object the chain is about)."""
    event = step["event"]
    resource = resource_of_kind(step["kind"])
    obj = step["object"]
    own = ref is not None and (resource, obj) == (ref.resource, ref.key)
    what_obj = "it" if own else _obj_text(resource, obj)
    rv = f" at RV {step['rv']}" if step["rv"] else ""
    paths = f" ({step['paths']})" if step["paths"] else ""
    detail = {"event": event, "resource": resource, "object": obj, "rv": step["rv"]}
    detail["paths"] = step["paths"]
    span = step["cause_span_id"]
    if not event:
        return (
            _link("none", "because its key was enqueued without a recorded cause", None),
            None,
            "",
        )
    if event in _REQUEUE:
        prev = find(span) if span else None
        if prev is not None:
            ended = prev["result"] or "running"
            if prev["error"]:
                ended += f": {prev['error']}"
            text = (
                f"because its previous reconcile by {prev['controller']} "
                f"(trace {_short(prev['trace_id'])}) ended {ended} ({event})"
            )
            return _link("requeue", text, prev, **detail), prev, span
        trace = _short(step["cause_trace_id"])
        text = f"because its previous reconcile (trace {trace}) asked to come back ({event})"
        return (
            _link("requeue", text, None, trace_id=step["cause_trace_id"], span_id=span, **detail),
            None,
            "",
        )
    if event in _INFORMER:
        text = f"because {_INFORMER[event]} {what_obj}{rv}"
        return _link("informer", text, None, **detail), None, ""
    past = _EVENT_PAST.get(event, event)
    if span:
        made_by = find(span)
        verb = step["verb"]
        did = _VERB_PAST.get(verb, past)
        who = f"{step['cause_controller']} {step['cause_key']}".strip() or "a reconcile"
        trace = _short(step["cause_trace_id"])
        text = f"because {who}'s reconcile (trace {trace}) {did} {what_obj}{rv}{paths}"
        link = _link("write", text, made_by, verb=verb, **detail)
        if made_by is None:
            link["trace_id"] = step["cause_trace_id"]
            link["span_id"] = span
            link["controller"] = step["cause_controller"]
            link["key"] = step["cause_key"]
        return link, made_by, span
    if step["writer"]:
        text = f"because {step['writer']} {past} {what_obj}{paths}{rv}"
        return _link("writer", text, None, writer=step["writer"], **detail), None, ""
    text = f"because {what_obj} was {past}{paths}{rv} by a writer it does not name"
    return _link("unknown", text, None, **detail), None, ""


def build_chain(
    history: ObjectHistorySnapshot, find: SpanLookup, max_links: int = MAX_LINKS
) -> list[CauseSnapshot]:
    """Why the object's newest step happened, newest cause first (see the module docstring)."""
    ref = ObjectRef(history["resource"], history["namespace"], history["name"])
    steps = history["steps"]
    start = next((s for s in reversed(steps) if s["step"] == "reconcile"), None)
    chain: list[CauseSnapshot] = []
    current: ObjectStepSnapshot | None
    if start is not None:
        chain.append(_start_line(start, ref))
        current = start
    else:
        last = next((s for s in reversed(steps) if s["step"] in ("write", "event")), None)
        if last is not None:
            made_by = find(last["span_id"]) if last["span_id"] else None
            who = f"{last['controller']} {last['key']}".strip() or "a reconcile not in the history"
            trace = _short(last["trace_id"])
            if last["step"] == "write":
                did = _VERB_PAST.get(last["verb"].split("/")[0], last["verb"])
                rv = f" at RV {last['rv']}" if last["rv"] else ""
                text = f"{ref} {did} by {who}'s reconcile (trace {trace}){rv}"
            else:
                text = f"{ref} got a {last['type']} event {last['reason']} from {who}'s reconcile"
                text += f" (trace {trace})"
            link = _link("made", text, made_by, verb=last["verb"], rv=last["rv"])
            if made_by is None:
                link["trace_id"] = last["trace_id"]
                link["span_id"] = last["span_id"]
                link["controller"] = last["controller"]
                link["key"] = last["key"]
            chain.append(link)
            if made_by is None:
                if last["span_id"]:
                    chain.append(_gone(last["trace_id"]))
                return chain
            current = made_by
        else:
            watch = next((s for s in reversed(steps) if s["step"] == "watch"), None)
            if watch is None:
                return chain
            current = watch
            chain.append(
                _link(
                    "watch",
                    f"{ref}: a watch event ({watch['event']}) enqueued {watch['controller']} "
                    f"{watch['key']}",
                    None,
                )
            )
    seen = {current["span_id"]} if current["span_id"] else set()
    while len(chain) < max_links:
        link, nxt, span = _cause(current, ref if len(chain) == 1 else None, find)
        chain.append(link)
        if not span:
            break
        if nxt is None:
            chain.append(_gone(link["trace_id"]))
            break
        if span in seen:
            break  # a loop: every reconcile of it is already in the chain
        seen.add(span)
        current = nxt
    return chain


def _gone(trace_id: str) -> CauseSnapshot:
    return _link(
        "unknown",
        f"(that reconcile, trace {_short(trace_id)}, is no longer in the history: see its trace)",
        None,
        trace_id=trace_id,
    )


def empty_report(ref: ObjectRef) -> ObjectReport:
    return {
        "resource": ref.resource,
        "namespace": ref.namespace,
        "name": ref.name,
        "now_ts": 0,
        "steps": [],
        "dropped": 0,
        "chain": [],
        "sources": [],
    }


def object_report(state: State, ref: ObjectRef, source: str = "") -> ObjectReport:
    """``ref``'s history and chain in ``state`` (an empty one when nothing touched it)."""
    report = empty_report(ref)
    report["now_ts"] = state.now_ts
    if source:
        report["sources"] = [{"source": source, "error": ""}]
    history = state.objects.history(ref)
    if history is None:
        return report
    report["steps"] = history["steps"]
    report["dropped"] = history["dropped"]
    report["chain"] = build_chain(history, state.objects.span)
    return report


def merge_reports(ref: ObjectRef, reports: Iterable[ObjectReport]) -> ObjectReport:
    """Several managers' reports of ``ref`` as one: steps merged by time (duplicates, the same
    step seen by two viewers, once), the chain of the report whose chain starts latest."""
    out = empty_report(ref)
    seen: set[tuple[object, ...]] = set()
    steps: list[ObjectStepSnapshot] = []
    best: Sequence[CauseSnapshot] = ()
    for report in reports:
        out["now_ts"] = max(out["now_ts"], report["now_ts"])
        out["dropped"] += report["dropped"]
        out["sources"].extend(report["sources"])
        for step in report["steps"]:
            ident = (step["ts"], step["instance"], step["step"], step["span_id"], step["rv"])
            if ident not in seen:
                seen.add(ident)
                steps.append(step)
        chain = report["chain"]
        if chain and (not best or chain[0]["ts"] > best[0]["ts"]):
            best = chain
    steps.sort(key=lambda s: s["ts"])
    out["steps"] = steps
    out["chain"] = list(best)
    return out


# ---------------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------------


def _clock(ts: int) -> str:
    if not ts:
        return "?"
    at = dt.datetime.fromtimestamp(ts / 1e9, tz=dt.UTC)
    return at.strftime("%H:%M:%S.%f")[:-3]


def step_text(step: ObjectStepSnapshot) -> str:
    """One history step as a line of text (without its time and instance)."""
    kind = step["step"]
    if kind == "watch":
        by = step["writer"]
        if not by and step["cause_span_id"]:
            who = f"{step['cause_controller']} {step['cause_key']}".strip() or "a reconcile"
            by = f"{who}'s {step['verb'] or 'write'} (trace {step['cause_trace_id']})"
        parts = [step["event"], f"rv {step['rv']}" if step["rv"] else "", step["paths"]]
        parts += [f"by {by}" if by else "", f"-> {step['controller']} {step['key']}"]
        if step["merged"] > 1:
            parts.append(f"({step['merged']} merged)")
    elif kind == "reconcile":
        parts = [step["controller"], step["result"] or "running", step["action"]]
        if step["result"]:
            parts.append(f"{step['dur_ns'] / 1e6:.1f} ms")
        parts.append(f"waited {step['wait_ms']:.1f} ms")
        if step["merged"] > 1:
            parts.append(f"{step['merged']} events merged")
        parts += [step["error"], f"trace {step['trace_id']}" if step["trace_id"] else ""]
    elif kind == "write":
        parts = [
            step["verb"],
            f"rv {step['rv']}" if step["rv"] else "",
            str(step["code"] or "no answer"),
        ]
        parts += [
            step["error"],
            f"by {step['controller']} {step['key']}" if step["controller"] else "",
        ]
    else:
        parts = [step["type"], step["reason"], step["event"]]
        parts.append(f"by {step['controller']} {step['key']}" if step["controller"] else "")
    return f"{kind:<9}  " + "  ".join(p for p in parts if p)


def render_text(report: ObjectReport, *, history: bool = True) -> str:
    """``pycm why``'s text: the chain (one cause a line, indented), then the history."""
    ref = ObjectRef(report["resource"], report["namespace"], report["name"])
    lines: list[str] = []
    chain = report["chain"]
    if chain:
        for depth, link in enumerate(chain):
            lines.append("  " * depth + link["text"])
    else:
        lines.append(f"{ref}: no step of it in the history")
    if history and report["steps"]:
        lines.append("")
        more = f", {report['dropped']} older dropped" if report["dropped"] else ""
        lines.append(f"history ({len(report['steps'])} steps{more}, times UTC):")
        for step in report["steps"]:
            lines.append(f"  {_clock(step['ts'])}  {step['instance']}  {step_text(step)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Finding an object from what a viewer shows
# ---------------------------------------------------------------------------------------------


def find_object(state: State, text: str) -> ObjectRef | None:
    """The object ``text`` names in ``state``: ``resource/namespace/name`` (or a kubectl short
    name), or a bare key ``namespace/name`` (as the Events filter ``key:`` and the controllers'
    tables show it) — then the object of that key with the newest reconcile, else the most
    recently touched one. None when nothing matches or ``text`` is malformed."""
    from pycm.trace.objref import RefError, parse_ref

    text = text.strip()
    if text.count("/") >= 2 or (text.count("/") == 1 and not _looks_like_key(text, state)):
        try:
            return parse_ref(text, known=state.objects.resources())
        except RefError:
            return None
    namespace, _, name = text.rpartition("/")
    matches = [okey for okey in state.objects.table if okey[1:] == (namespace, name)]
    if not matches:
        return None
    best = None
    for step in reversed(state.objects.spans.values()):  # the newest reconcile first
        if step[OKEY] in matches:
            best = step[OKEY]
            break
    okey = best or matches[-1]  # table order: the most recently touched last
    return ObjectRef(*okey)


def _looks_like_key(text: str, state: State) -> bool:
    namespace, _, name = text.partition("/")
    return any(okey[1:] == (namespace, name) for okey in state.objects.table)


def object_of_event(state: State, event: object) -> ObjectRef | None:
    """The object an event names (a reconcile, a write, a core/v1 Event), if it has a history."""
    from pycm.trace import kinds as k
    from pycm.trace.objref import resource_of_kind

    if isinstance(event, k.ReconcileStarted) and event.resource:
        ns, _, name = event.key.rpartition("/")
        ref = ObjectRef(event.resource, ns, name)
    elif isinstance(event, k.ReconcileFinished):
        step = state.objects.spans.get(event.span_id)
        if step is None:
            return find_object(state, event.key)
        ref = ObjectRef(*step[OKEY])
    elif isinstance(event, k.ApiRequestCompleted) and event.name and event.resource:
        ref = ObjectRef(event.resource, event.namespace, event.name)
    elif isinstance(event, k.EventRecorded) and event.name:
        ref = ObjectRef(resource_of_kind(event.object_kind), event.namespace, event.name)
    elif isinstance(event, k.ItemAdded | k.ItemTaken | k.ItemDone | k.ItemRequeued):
        return find_object(state, event.key)
    else:
        return None
    return ref if state.objects.history(ref) is not None else None
