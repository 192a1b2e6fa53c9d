"""Sharding: each ring's members (from the ``shard.*`` events their members report) — whose
Lease is live, each one's share of the hash space and of the keys, its drains — and the ring's
moves, newest last: joins, leaves, fences, drains and relists.

A member is known by its identity (the events' ``member``), not by the instance that reported
it: a viewer of one replica still sees the others, from that replica's view of the ring (its
``target`` names the live members; a member named there but never reporting is ``reported``
False). A member's own reports win over what others say of it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypedDict

from pycm.trace.events import Event
from pycm.trace.kinds import (
    ShardDrainFinished,
    ShardDrainStarted,
    ShardLayoutChanged,
    ShardMemberFenced,
    ShardMemberJoined,
    ShardMemberLeft,
    ShardMemberUnfenced,
    ShardRelisted,
    ShardViewChanged,
)
from pycm.trace.state.domain import Moment, Stream
from pycm.trace.state.informers import InformerRecord
from pycm.trace.state.record import BoundedTable, Record, records, text_key
from pycm.trace.state.record import ring as ring_loader  # `ring` is a field name here
from pycm.trace.state.registry import also_handles, handles

if TYPE_CHECKING:
    from pycm.trace.state.startup import InstanceRecord

__all__ = [
    "MARKS",
    "MAX_MEMBERS",
    "MAX_RINGS",
    "MOVES",
    "SECTION",
    "MarkSnapshot",
    "MemberRecord",
    "MemberSnapshot",
    "MoveSnapshot",
    "RingRecord",
    "RingSnapshot",
    "StateView",
    "attach",
    "dump",
    "load",
]

MAX_RINGS = 16
MAX_MEMBERS = 64  # per ring: replicas of one manager
MOVES = 64  # moves kept per ring (minutes of a churning ring, hours of a quiet one)
MARKS = 64  # timeline marks kept per ring (the mark-history block at the end)


class MemberSnapshot(TypedDict):
    """One member of a ring."""

    member: Annotated[str, "its identity"]
    instance: Annotated[str, 'the instance that reported it ("" only seen in others\' views)']
    reported: Annotated[bool, "it reported itself (else only seen in another member's view)"]
    lease_live: Annotated[bool, "its Lease is live: joined and neither fenced nor left"]
    fenced: Annotated[bool, "its own Lease went unrenewed past the renew deadline"]
    left: Annotated[bool, "it left the ring (released its Lease)"]
    view: Annotated[str, "the members of the view it published, comma-separated"]
    target: Annotated[str, "the live members it sees, comma-separated"]
    share: Annotated[float, "its fraction of the hash space under its published view"]
    target_share: Annotated[float, "its fraction under its target"]
    keys_in_flight: Annotated[int, "keys it was reconciling at its last view report"]
    objects_cached: Annotated[int, "objects its sharded informers held at its last relist"]
    informers: Annotated[int, "its sharded informers"]
    resources: Annotated[str, "their resources, comma-separated (at its last relist)"]
    keys_cached: Annotated[
        int, "reconcile keys of its share at its last relist: its primary informers' objects"
    ]
    key_resources: Annotated[str, "the resources whose objects are keys, comma-separated"]
    relists: Annotated[int, "relists for a changed share"]
    draining: Annotated[bool, "it waits for in-flight keys before giving up part of its share"]
    drain_started_ts: Annotated[int, "when the running drain started (Unix ns; 0 none)"]
    drain_keys: Annotated[int, "keys the running (or last) drain waited for"]
    drains: Annotated[int, "drains finished"]
    last_drain_ms: Annotated[float, "the last drain's duration"]
    max_drain_ms: Annotated[float, "the longest drain"]
    fences: Annotated[int, "times it was fenced"]
    joined_ts: Annotated[int, "when it joined (Unix ns; 0 not seen)"]
    last_ts: Annotated[int, "its newest report (Unix ns)"]
    touched: Annotated[int, "recency for eviction"]
    objects: Annotated[
        int,
        "objects its sharded informers hold now: their informer records' sum when the stream "
        "has them, else objects_cached (derived)",
    ]
    keys: Annotated[
        int,
        "reconcile keys of its share now: the key resources' informer records' sum when the "
        "stream has them, else keys_cached (derived)",
    ]


class MoveSnapshot(TypedDict):
    """One change of a ring."""

    ts: Annotated[int, "when (Unix ns)"]
    member: Annotated[str, "the member that reported it"]
    kind: Annotated[
        str, "joined, left, fenced, unfenced, view, drain_started, drain, relist, layout"
    ]
    text: Annotated[str, "what happened (names, counts and timings)"]


class RingSnapshot(TypedDict):
    """One hash ring (``--sharding-ring``)."""

    ring: Annotated[str, "its name"]
    members: Annotated[dict[str, MemberSnapshot], "identity -> member"]
    moves: Annotated[
        list[MoveSnapshot], "joins, leaves, fences, drains, relists and layouts, oldest first"
    ]
    marks: Annotated[list[MarkSnapshot], "the members' timeline marks, oldest first"]
    drains: Annotated[int, "drains finished by its members"]
    fences: Annotated[int, "times its members were fenced"]
    layout: Annotated[str, 'digest of the newest layout a member wrote ("": none seen)']
    layouts: Annotated[int, "layouts its members wrote"]
    touched: Annotated[int, "recency for eviction"]
    live_members: Annotated[int, "members whose Lease is live (derived)"]


@dataclass(slots=True)
class MemberRecord(Record):
    """One member of a ring."""

    member: str = ""
    instance: str = ""
    reported: bool = False
    lease_live: bool = False
    fenced: bool = False
    left: bool = False
    view: str = ""
    target: str = ""
    share: float = 0.0
    target_share: float = 0.0
    keys_in_flight: int = 0
    objects_cached: int = 0
    informers: int = 0
    resources: str = ""
    keys_cached: int = 0
    key_resources: str = ""
    relists: int = 0
    draining: bool = False
    drain_started_ts: int = 0
    drain_keys: int = 0
    drains: int = 0
    last_drain_ms: float = 0.0
    max_drain_ms: float = 0.0
    fences: int = 0
    joined_ts: int = 0
    last_ts: int = 0
    touched: int = 0


def _members() -> BoundedTable[str, MemberRecord]:
    return BoundedTable(MAX_MEMBERS, lambda name: MemberRecord(member=text_key(name)))


@dataclass(slots=True)
class RingRecord(Record):
    """One hash ring: its members and its moves."""

    ring: str = ""
    members: BoundedTable[str, MemberRecord] = field(default_factory=_members)
    moves: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MOVES))
    marks: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MARKS))  # at the end
    drains: int = 0
    fences: int = 0
    layout: str = ""
    layouts: int = 0
    touched: int = 0

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "members": records(MemberRecord, MAX_MEMBERS),
        "moves": ring_loader(MOVES),
        "marks": ring_loader(MARKS),
    }


SECTION = "sharding"


class StateView(Stream, Protocol):
    """The state as this domain sees it (the informers' tables for the objects cached now)."""

    sharding: BoundedTable[str, RingRecord]
    informers: BoundedTable[tuple[str, str], InformerRecord]


def new_table() -> BoundedTable[str, RingRecord]:
    return BoundedTable(MAX_RINGS, lambda name: RingRecord(ring=text_key(name)))


def attach(state: StateView) -> None:
    state.sharding = new_table()


def dump(state: StateView, at: Moment) -> dict[str, RingSnapshot]:
    out: dict[str, RingSnapshot] = {}
    for name, rec in state.sharding.items():
        d = rec.dump()
        d["live_members"] = sum(1 for m in rec.members.values() if m.lease_live)
        for identity, member in rec.members.items():
            snapshot = d["members"][identity]
            snapshot["objects"] = _held_now(state, member, member.resources, member.objects_cached)
            snapshot["keys"] = _held_now(state, member, member.key_resources, member.keys_cached)
        out[name] = d  # type: ignore[assignment]
    return out


def _held_now(state: StateView, member: MemberRecord, resources: Any, at_relist: Any) -> int:
    """What the member's informers of ``resources`` (comma-separated) hold by their own
    progress reports (the relist's count is from before the relist); ``at_relist``, the
    relist's count, when the stream has none of them."""
    names = resources.split(",") if isinstance(resources, str) else []
    held = [
        state.informers[key].objects
        for key in ((member.instance, r) for r in names if r)
        if key in state.informers
    ]
    counts = [n for n in held if isinstance(n, int)]  # a hand-edited recording may hold others
    if counts:
        return sum(counts)
    return at_relist if isinstance(at_relist, int) else 0


def load(state: StateView, data: Any) -> None:
    state.sharding.fill((k, RingRecord.load(v)) for k, v in (data or {}).items())


# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


class _ShardEvent(Protocol):
    @property
    def ts(self) -> int: ...
    @property
    def instance(self) -> str: ...
    @property
    def ring(self) -> str: ...
    @property
    def member(self) -> str: ...


def _reporter(state: StateView, ev: _ShardEvent) -> tuple[RingRecord, MemberRecord]:
    """The ring and the member that reported ``ev`` (both touched)."""
    rec = state.sharding[ev.ring]
    rec.touched = state.applied
    member = rec.members[ev.member]
    member.touched = state.applied
    member.reported = True
    member.instance = ev.instance
    member.last_ts = ev.ts
    return rec, member


def _move(rec: RingRecord, ev: Event, member: str, kind: str, text: str) -> None:
    rec.moves.append({"ts": ev.ts, "member": member, "kind": kind, "text": text})


def _pct(share: float) -> str:
    return f"{share * 100:.1f}%"


@handles(ShardMemberJoined)
def _joined(state: StateView, ev: ShardMemberJoined, inst: InstanceRecord) -> None:
    rec, member = _reporter(state, ev)
    member.lease_live, member.left, member.fenced = True, False, False
    member.joined_ts = ev.ts
    member.view = ev.view
    member.share = ev.share
    _move(rec, ev, ev.member, "joined", f"{ev.member} joined ({_pct(ev.share)} of its view)")


@handles(ShardMemberLeft)
def _left(state: StateView, ev: ShardMemberLeft, inst: InstanceRecord) -> None:
    rec, member = _reporter(state, ev)
    member.lease_live, member.left, member.draining = False, True, False
    member.share = member.target_share = 0.0
    member.view = ""
    _move(rec, ev, ev.member, "left", f"{ev.member} left after {ev.on_ring_s:.0f}s on the ring")


@handles(ShardMemberFenced)
def _fenced(state: StateView, ev: ShardMemberFenced, inst: InstanceRecord) -> None:
    rec, member = _reporter(state, ev)
    member.fenced, member.lease_live = True, False
    member.fences += 1
    rec.fences += 1
    age = "never renewed" if ev.renew_age_s < 0 else f"renewed {ev.renew_age_s:.1f}s ago"
    text = f"{ev.member} fenced: {age} (deadline {ev.renew_deadline_s:g}s)"
    _move(rec, ev, ev.member, "fenced", text)
    state.error(ev, f"sharding {ev.ring}: {text}")


@handles(ShardMemberUnfenced)
def _unfenced(state: StateView, ev: ShardMemberUnfenced, inst: InstanceRecord) -> None:
    rec, member = _reporter(state, ev)
    member.fenced = False
    member.lease_live = not member.left
    _move(rec, ev, ev.member, "unfenced", f"{ev.member} renewed again after {ev.fenced_s:.1f}s")


def _names(text: str) -> list[str]:
    return [n for n in text.split(",") if n]


@handles(ShardViewChanged)
def _view_changed(state: StateView, ev: ShardViewChanged, inst: InstanceRecord) -> None:
    for text in (ev.view, ev.target, ev.joined, ev.left):
        text_key(text)  # member lists are split below: anything else is malformed, untouched
    rec, member = _reporter(state, ev)
    member.view, member.target = ev.view, ev.target
    member.share, member.target_share = ev.share, ev.target_share
    member.keys_in_flight = ev.keys_in_flight
    if not member.fenced and not member.left:
        member.lease_live = True
    if ev.view == ev.target:  # nothing left to give up (a drain the ring undid ends here too)
        member.draining = False
        member.drain_started_ts = 0
    # What this member sees of the others: those it sees live, those it saw go. A member that
    # never reported is judged by the others' views; one that did, by its own reports — unless
    # another sees it gone after its last one (killed: its Lease expired without a word).
    for name in _names(ev.target):
        other = rec.members[name]
        other.touched = state.applied
        if not other.reported:
            other.lease_live = True
    for name in _names(ev.left):
        gone = rec.members.get(name)
        if gone is not None and (not gone.reported or gone.last_ts <= ev.ts):
            gone.lease_live = False
    parts = []
    others = [n for n in _names(ev.joined) if n != ev.member]
    if others:
        parts.append(f"sees {', '.join(others)} join")
    if ev.left:
        parts.append(f"sees {', '.join(_names(ev.left))} gone")
    parts.append(f"view {ev.view or '-'} ({_pct(ev.share)}), {ev.members} live")
    text = f"{ev.member}: {'; '.join(parts)}"
    _move(rec, ev, ev.member, "view", text)


@handles(ShardDrainStarted)
def _drain_started(state: StateView, ev: ShardDrainStarted, inst: InstanceRecord) -> None:
    rec, member = _reporter(state, ev)
    member.draining = True
    member.drain_started_ts = ev.ts
    member.drain_keys = ev.keys
    text = f"{ev.member} drains {_pct(ev.share_dropped)}: waits for {ev.keys} key(s) in flight"
    _move(rec, ev, ev.member, "drain_started", text)


@handles(ShardDrainFinished)
def _drain_finished(state: StateView, ev: ShardDrainFinished, inst: InstanceRecord) -> None:
    rec, member = _reporter(state, ev)
    member.draining = False
    member.drain_started_ts = 0
    member.drain_keys = ev.keys
    member.drains += 1
    member.last_drain_ms = ev.duration_ms
    member.max_drain_ms = max(member.max_drain_ms, ev.duration_ms)
    rec.drains += 1
    text = (
        f"{ev.member} gave up {_pct(ev.share_dropped)} after {ev.duration_ms:.0f}ms"
        f" ({ev.keys} key(s) drained)"
    )
    _move(rec, ev, ev.member, "drain", text)


@handles(ShardRelisted)
def _relisted(state: StateView, ev: ShardRelisted, inst: InstanceRecord) -> None:
    for text in (ev.resources, ev.key_resources):
        text_key(text)  # split when the snapshot is taken: a string or malformed
    rec, member = _reporter(state, ev)
    member.relists += 1
    member.informers = ev.informers
    member.objects_cached = ev.objects_cached
    member.resources = ev.resources
    member.keys_cached = ev.keys_cached
    member.key_resources = ev.key_resources
    text = (
        f"{ev.member} relists {ev.informers} informer(s) for {_pct(ev.share)}"
        f" ({ev.spans} span(s); {ev.keys_cached} key(s), {ev.objects_cached} object(s)"
        " cached before)"
    )
    _move(rec, ev, ev.member, "relist", text)


@handles(ShardLayoutChanged)
def _layout_changed(state: StateView, ev: ShardLayoutChanged, inst: InstanceRecord) -> None:
    rec, _member = _reporter(state, ev)
    rec.layout = text_key(ev.digest)
    rec.layouts += 1
    previous = ev.previous or "the plain ring"
    text = (
        f"{ev.member} wrote layout {ev.digest or 'none'} (was {previous}): {ev.namespaces}"
        f" namespace(s) over {ev.members} member(s), at most {ev.most_before} on one member"
        f" before, {ev.most_after} after"
    )
    _move(rec, ev, ev.member, "layout", text)


# ---------------------------------------------------------------------------------------------
# Mark history: each member's lane on the ring's timeline (tui/views/sharding_timeline.py).
#
# ``moves`` says, as text, what each member reported; a timeline needs, per member, what happened
# to it and when. A mark names the member it is about (``member``) and the member that reported
# it (``by``): a member killed without a word gets its ``gone`` mark from the first other member
# that sees it gone, and one that never reports its ``joined`` from the first that sees it live.
# Each mark carries the ring's live members after it (``live``), so the member count is drawn
# without a replay. These functions run after the handlers above (``also_handles``), on the
# records those left; they only append to ``RingRecord.marks``.
# ---------------------------------------------------------------------------------------------


class MarkSnapshot(TypedDict):
    """One mark on a member's lane of its ring's timeline."""

    ts: Annotated[int, "when (Unix ns)"]
    member: Annotated[str, "the member it is about"]
    kind: Annotated[
        str,
        "joined, left, gone (another member saw its Lease expire), fenced, unfenced, "
        "drain_started, drain (finished), view (its view or target changed), relist, layout "
        "(it wrote a new layout for the ring)",
    ]
    by: Annotated[str, "the member that reported it (itself but for gone and a join only seen)"]
    live: Annotated[int, "the ring's live members after it"]


_OFF_RING = frozenset({"left", "gone"})


def _add_mark(rec: RingRecord, ts: int, member: str, kind: str, by: str) -> None:
    live = sum(1 for m in rec.members.values() if m.lease_live)
    rec.marks.append({"ts": ts, "member": member, "kind": kind, "by": by, "live": live})


def _on_lane(rec: RingRecord, member: str, *, unmarked: bool) -> bool:
    """Whether ``member`` is on the ring by its newest mark (``unmarked``: it has none left)."""
    for mark in reversed(rec.marks):
        if mark["member"] == member:
            return mark["kind"] not in _OFF_RING
    return unmarked


def _marks_own(kind: str) -> Callable[[StateView, Any, Any], None]:
    """The mark handler of a shard.* event a member reports about itself."""

    def mark(state: StateView, event: Any, inst: Any) -> None:
        ev: _ShardEvent = event  # each kind registered below is one
        _add_mark(state.sharding[ev.ring], ev.ts, ev.member, kind, ev.member)

    return mark


for _kind, _mark_kind in (
    (ShardMemberJoined, "joined"),
    (ShardMemberLeft, "left"),
    (ShardMemberFenced, "fenced"),
    (ShardMemberUnfenced, "unfenced"),
    (ShardDrainStarted, "drain_started"),
    (ShardDrainFinished, "drain"),
    (ShardRelisted, "relist"),
    (ShardLayoutChanged, "layout"),
):
    also_handles(_kind)(_marks_own(_mark_kind))


@also_handles(ShardViewChanged)
def _mark_view(state: StateView, ev: ShardViewChanged, inst: InstanceRecord) -> None:
    """The reporter's move, and what it is the first to see of members that say nothing."""
    rec = state.sharding[ev.ring]
    for name in _names(ev.target):
        seen = rec.members.get(name)
        fresh = seen is not None and not seen.reported and name != ev.member
        if fresh and not _on_lane(rec, name, unmarked=False):
            _add_mark(rec, ev.ts, name, "joined", ev.member)
    for name in _names(ev.left):
        gone = rec.members.get(name)
        unsaid = gone is not None and not gone.lease_live and not gone.left
        if unsaid and _on_lane(rec, name, unmarked=True):
            _add_mark(rec, ev.ts, name, "gone", ev.member)
    _add_mark(rec, ev.ts, ev.member, "view", ev.member)
