"""The object panel's data: ``GET /api/objects?ref=<text>[&controller=<name>]``.

Why here, from the hub's states, and not from the managers' snapshots with ``objects=``: every
source of the hub already folds its events into a :class:`~pycm.trace.state.State` — its own in
``pycm dashboard --server …`` and ``--replay`` (a recording has no manager to ask), the
manager's own when mounted in ``pycm run`` — and a state folds every object's history
(:mod:`pycm.trace.state.objects`). Answering from them costs the managers nothing, works the
same live and in replay (the replay's position is the states' position), needs no new stream
per viewer, and can walk a chain *across* replicas: after a failover the new leader's reconcile
was triggered by a write of the old leader's, whose reconcile only the old leader's source
indexed. So the answer is one history (every source's steps, merged by time, duplicates once)
and one chain built from it by :func:`pycm.trace.why.build_chain`, with a span look-up that asks
every source. The cost is bounded: at most 50 steps per source, 16 links, and the page asks at
most once a frame (4 a second) while the panel is open, only when something new arrived. What
the hub's states lack is what happened before the dashboard connected to a manager: a
reconnect's snapshot carries no histories (the stream is not asked for ``objects=``).

``ref`` is what a user typed or clicked: ``resource/namespace/name`` (kubectl short names too),
``resource/name`` for a cluster-scoped object, or a bare key ``namespace/name`` — resolved
against the objects the sources have seen: the one reconciled by ``controller`` when given
(a click in a controller's table), else in the order of :data:`~pycm.trace.objref.KIND_RESOURCES`
(deployments first), the others alphabetically; the rest are listed as ``candidates``. Bad input
is a 400 with a one-line ``{"error": …}``; an object nothing touched is a 200 with no steps.

Each link of the chain gains ``lane`` (its controller, or :data:`OUTSIDE` for outside writers,
the informer and causes it cannot name) and ``at`` (when to draw it: the reconcile's begin,
else when the event it names was enqueued), so the page draws it on a time axis as given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pycm.trace.objref import KIND_RESOURCES, ObjectRef, RefError, UnknownResource, parse_ref
from pycm.trace.state import State
from pycm.trace.state.object_steps import ObjectHistorySnapshot, ObjectStepSnapshot
from pycm.trace.why import CauseSnapshot, build_chain, empty_report

__all__ = ["OUTSIDE", "ObjectSources", "object_view", "objects_route", "resolve"]

OUTSIDE = "outside"  # the lane of outside writers, the informer and unnamed causes
_RANK = {resource: i for i, resource in enumerate(KIND_RESOURCES.values())}
_MAX_TEXT = 600  # a reference is at most ~520 characters (three names of 253 and slashes)
_HINT = "want resource/namespace/name or namespace/name, e.g. deployments/default/web"


class ObjectSources(Protocol):
    """What the route reads: each source's state, by name (None: it keeps no histories)."""

    def object_states(self) -> Mapping[str, State | None]: ...


def _rank(resource: str) -> tuple[int, str]:
    return _RANK.get(resource, len(_RANK)), resource


def _reconciled_by(states: Iterable[State], okey: tuple[str, str, str], controller: str) -> bool:
    return any(state.objects.reconciled_by(okey, controller) for state in states)


def resolve(
    states: Mapping[str, State], text: str, controller: str = ""
) -> tuple[ObjectRef | None, list[ObjectRef]]:
    """The object ``text`` names and the other objects it could name (see the module
    docstring); (None, []) for a bare key nothing touched. Raises RefError on bad input."""
    text = text.strip()
    if not text:
        raise RefError(_HINT)
    if len(text) > _MAX_TEXT:
        raise RefError(f"that is {len(text)} characters: {_HINT}")
    known: set[str] = set()
    for state in states.values():
        known |= state.objects.resources()
    parts = text.strip("/").split("/")
    if len(parts) == 3:
        return parse_ref(text, known=known), []
    if len(parts) == 2:
        try:
            return parse_ref(text, known=known), []  # resource/name (cluster-scoped)
        except UnknownResource:
            pass  # namespace/name: a key
        # (a resource's name first, deploy/web: the RefError says what is wrong with it)
    if len(parts) > 3:
        raise RefError(f"{text!r}: {_HINT}")
    # A key: checked as a namespaced (or cluster-scoped) object's would be.
    probe = "pods/" if len(parts) == 2 else "nodes/"
    try:
        checked = parse_ref(probe + text.strip("/"))
    except RefError as exc:
        raise RefError(str(exc).replace(repr(probe + text.strip("/")), repr(text))) from None
    namespace, name = checked.namespace, checked.name
    found = sorted(
        {
            okey[0]
            for state in states.values()
            for okey in state.objects.table
            if okey[1:] == (namespace, name)
        },
        key=_rank,
    )
    refs = [ObjectRef(resource, namespace, name) for resource in found]
    if controller:
        by = [
            r
            for r in refs
            if _reconciled_by(states.values(), (r.resource, namespace, name), controller)
        ]
        refs = by + [r for r in refs if r not in by]
    if not refs:
        return None, []
    return refs[0], refs[1:]


def _ident(step: ObjectStepSnapshot) -> tuple[object, ...]:
    return (step["ts"], step["instance"], step["step"], step["span_id"], step["rv"], step["verb"])


def _merged(states: Mapping[str, State], ref: ObjectRef) -> ObjectHistorySnapshot | None:
    steps: list[ObjectStepSnapshot] = []
    seen: set[tuple[object, ...]] = set()
    dropped = size = 0
    found = False
    for state in states.values():
        hist = state.objects.history(ref)
        if hist is None:
            continue
        found = True
        dropped += hist["dropped"]
        size += hist["bytes"]
        for step in hist["steps"]:
            ident = _ident(step)
            if ident not in seen:
                seen.add(ident)
                steps.append(step)
    if not found:
        return None
    steps.sort(key=lambda s: s["ts"])
    return {
        "resource": ref.resource,
        "namespace": ref.namespace,
        "name": ref.name,
        "steps": steps,
        "dropped": dropped,
        "bytes": size,
    }


def _span_lookup(states: Mapping[str, State]) -> Callable[[str], ObjectStepSnapshot | None]:
    def find(span_id: str) -> ObjectStepSnapshot | None:
        for state in states.values():
            step = state.objects.span(span_id)
            if step is not None:
                return step
        return None

    return find


def _placed(
    chain: list[CauseSnapshot], find: Callable[[str], ObjectStepSnapshot | None], now_ts: int
) -> list[dict[str, Any]]:
    """Each link with its ``lane`` and ``at`` (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for i, link in enumerate(chain):
        at = link["ts"]
        if not at and i > 0:
            # A cause with no reconcile of its own: the event it names reached the queue when
            # the effect's key was enqueued (the effect's begin less its queue wait).
            effect = chain[i - 1]
            step = find(effect["span_id"]) if effect["span_id"] else None
            if step is not None:
                at = step["ts"] - int(step["wait_ms"] * 1e6)
            else:
                at = out[i - 1]["at"]
        placed: dict[str, Any] = dict(link)
        placed["at"] = at or now_ts
        placed["lane"] = link["controller"] or OUTSIDE
        out.append(placed)
    return out


def object_view(
    states: Mapping[str, State], ref: ObjectRef, errors: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``ref``'s report across ``states`` (an :class:`~pycm.trace.why.ObjectReport` whose chain
    links carry ``lane`` and ``at``), plus its ``path``."""
    report: dict[str, Any] = dict(empty_report(ref))
    report["path"] = ref.path
    report["now_ts"] = max((s.now_ts for s in states.values()), default=0)
    report["sources"] = [{"source": name, "error": ""} for name in states]
    report["sources"] += [{"source": n, "error": e} for n, e in (errors or {}).items()]
    history = _merged(states, ref)
    if history is None:
        return report
    find = _span_lookup(states)
    report["steps"] = history["steps"]
    report["dropped"] = history["dropped"]
    report["chain"] = _placed(build_chain(history, find), find, report["now_ts"])
    return report


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def objects_route(sources: ObjectSources) -> Route:
    """``GET /api/objects`` (relative to the dashboard prefix; see the module docstring)."""

    async def handle(request: Request) -> Response:
        params = request.query_params
        text = params.get("ref", "")
        controller = params.get("controller", "")
        states: dict[str, State] = {}
        errors: dict[str, str] = {}
        for name, state in sources.object_states().items():
            if state is None:
                errors[name] = "this source keeps no object histories"
            else:
                states[name] = state
        try:
            ref, others = resolve(states, text, controller)
        except RefError as exc:
            return _error(400, str(exc))
        if ref is None:
            # A key nothing touched: nothing says which resource it is.
            key = text.strip().strip("/")
            view: dict[str, Any] = dict(empty_report(ObjectRef("", *_split(key))))
            view["path"] = key
            view["sources"] = [{"source": name, "error": ""} for name in states]
        else:
            view = object_view(states, ref, errors)
        view["candidates"] = [r.path for r in others]
        return Response(
            orjson.dumps(view), media_type="application/json", headers={"Cache-Control": "no-store"}
        )

    return Route("/api/objects", handle, methods=["GET"])


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name
