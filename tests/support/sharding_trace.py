"""A synthetic trace of a sharded ring, as three members' buses would stamp it: pycm-0, pycm-1
and pycm-2 join ring ``pycm`` (pycm-0 first, alone; it drains two thirds at once when the others
appear), pycm-3 joins and pycm-0 waits 2.5 s for an in-flight key before it gives its part up,
pycm-1 is fenced for 4 s, and pycm-3 leaves. Shares are those of a real ring of these names.

The state, TUI and dashboard tests feed it; the events are what pycm.sharding emits (the
membership tests check that side against the emulator)."""

from __future__ import annotations

import itertools
from typing import Any

from pycm.sharding.ring import Ring
from pycm.trace import kinds as k
from pycm.trace.events import Event

__all__ = ["T0", "layout_written", "ring_trace"]

T0 = 1_790_000_000_000_000_000
_S = 1_000_000_000
THREE = ("pycm-0", "pycm-1", "pycm-2")
RESOURCES = "deployments.apps,pods,replicasets.apps"
KEY_RESOURCES = "deployments.apps,replicasets.apps"  # the controllers' primary resources
FOUR = (*THREE, "pycm-3")


def _names(members: tuple[str, ...] | list[str]) -> str:
    return ",".join(sorted(members))


def ring_trace(t0: int = T0) -> list[Event]:
    """The events, in ts order, stamped (instance = member, seq per instance, ts)."""
    three, four = Ring.of(THREE), Ring.of(FOUR)
    out: list[tuple[float, Event, str]] = []

    def at(seconds: float, event: Any) -> None:  # a shard.* kind: each names its member
        out.append((seconds, event, str(event.member)))

    def view(
        seconds: float,
        member: str,
        view: tuple[str, ...],
        target: tuple[str, ...],
        before: tuple[str, ...],
        keys: int = 0,
    ) -> None:
        at(
            seconds,
            k.ShardViewChanged(
                ring="pycm",
                member=member,
                view=_names(view),
                target=_names(target),
                members=len(target),
                share=Ring.of(view).share(member),
                target_share=Ring.of(target).share(member),
                joined=_names([m for m in target if m not in before]),
                left=_names([m for m in before if m not in target]),
                keys_in_flight=keys,
            ),
        )

    at(0.0, k.ShardMemberJoined(ring="pycm", member="pycm-0", view="pycm-0", share=1.0))
    view(0.0, "pycm-0", ("pycm-0",), ("pycm-0",), ())
    for i, name in enumerate(THREE[1:], 1):
        at(0.1 * i, k.ShardMemberJoined(ring="pycm", member=name, view=name, share=1.0))
    at(
        2.0,
        k.ShardDrainFinished(
            ring="pycm",
            member="pycm-0",
            keys=0,
            share_dropped=1 - three.share("pycm-0"),
            duration_ms=0.0,
        ),
    )
    for name in THREE:
        view(2.0, name, THREE, THREE, ("pycm-0",) if name == "pycm-0" else (name,))
        at(
            2.0,
            k.ShardRelisted(
                ring="pycm",
                member=name,
                informers=3,
                share=three.share(name),
                spans=40,
                objects_cached=120,
                resources=RESOURCES,
                keys_cached=40,
                key_resources=KEY_RESOURCES,
            ),
        )
    # pycm-3 joins; pycm-0 waits for one key it gives up.
    at(10.0, k.ShardMemberJoined(ring="pycm", member="pycm-3", view="pycm-3", share=1.0))
    dropped = three.share("pycm-0") - four.share("pycm-0")
    at(12.0, k.ShardDrainStarted(ring="pycm", member="pycm-0", keys=1, share_dropped=dropped))
    view(12.0, "pycm-0", THREE, FOUR, THREE, keys=1)
    at(
        14.5,
        k.ShardDrainFinished(
            ring="pycm", member="pycm-0", keys=1, share_dropped=dropped, duration_ms=2500.0
        ),
    )
    for name in FOUR:
        view(14.5, name, FOUR, FOUR, THREE if name != "pycm-3" else ("pycm-3",))
    at(
        14.6,
        k.ShardRelisted(
            ring="pycm",
            member="pycm-0",
            informers=3,
            share=four.share("pycm-0"),
            spans=52,
            objects_cached=118,
            resources=RESOURCES,
            keys_cached=39,
            key_resources=KEY_RESOURCES,
        ),
    )
    # pycm-1 cannot renew for a while.
    at(
        20.0,
        k.ShardMemberFenced(ring="pycm", member="pycm-1", renew_age_s=10.2, renew_deadline_s=10.0),
    )
    at(24.0, k.ShardMemberUnfenced(ring="pycm", member="pycm-1", fenced_s=4.0))
    # pycm-3 leaves: it drains its whole share, then releases.
    at(
        30.0,
        k.ShardDrainFinished(
            ring="pycm",
            member="pycm-3",
            keys=0,
            share_dropped=four.share("pycm-3"),
            duration_ms=3.0,
        ),
    )
    at(30.1, k.ShardMemberLeft(ring="pycm", member="pycm-3", on_ring_s=20.1))
    for name in THREE:
        view(32.0, name, THREE, THREE, FOUR)

    seq: dict[str, itertools.count[int]] = {}
    events = []
    for seconds, event, member in sorted(out, key=lambda entry: entry[0]):
        object.__setattr__(event, "instance", member)
        object.__setattr__(event, "seq", next(seq.setdefault(member, itertools.count(1))))
        object.__setattr__(event, "ts", t0 + int(seconds * _S))
        events.append(event)
    return events


def layout_written(ts_s: float, digest: str, previous: str) -> k.ShardLayoutChanged:
    """pycm-1 writing a layout for ten namespaces over three members, ``ts_s`` after T0."""
    ev = k.ShardLayoutChanged(
        ring="pycm",
        member="pycm-1",
        digest=digest,
        previous=previous,
        namespaces=10,
        knots=10,
        members=3,
        most_before=10,
        most_after=4,
    )
    for name, value in (("instance", "pycm-1"), ("seq", 99), ("ts", T0 + int(ts_s * _S))):
        object.__setattr__(ev, name, value)
    return ev
