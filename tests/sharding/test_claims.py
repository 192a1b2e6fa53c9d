"""Never two owners: the claim rules on a fake clock, as client-go tests its elector — a table of
joins, leaves, pauses and partitions, then random schedules of the same with the invariant
checked at every step: no key is in flight on two members that are not fenced."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import pytest

from pycm.api.sharding import FIELD_UID, hash_field
from pycm.sharding.claims import Claim, MemberClaims, PeerRecord
from pycm.sharding.layout import IDENTITY, Layout, spread_hashes
from pycm.sharding.ring import Ring

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 15.0, 10.0, 2.0
_KEY_RNG = random.Random(1)
KEYS = [_KEY_RNG.randrange(1 << 64) for _ in range(60)]
STEP = 0.5


@dataclass
class _Member:
    claims: MemberClaims
    in_flight: dict[int, float] = field(default_factory=dict)  # key hash -> when it finishes
    next_renew: float = 0.0
    paused_until: float = 0.0
    cut_off_until: float = 0.0  # partitioned from the API server
    crashed: bool = False
    left: bool = False


@dataclass
class _Cluster:
    """The API server's Leases and the members; every member follows the claim rules."""

    rng: random.Random
    now: float = 0.0
    leases: dict[str, tuple[frozenset[str], int, str]] = field(default_factory=dict)
    members: dict[str, _Member] = field(default_factory=dict)
    version: int = 0
    taken: int = 0
    keys: list[int] = field(default_factory=lambda: KEYS)
    layout: Layout = IDENTITY  # the ring's shared layout Lease

    def join(self, name: str) -> None:
        self.members[name] = _Member(
            MemberClaims(name, LEASE_DURATION, RENEW_DEADLINE), next_renew=self.now
        )

    def records(self) -> list[PeerRecord]:
        return [PeerRecord(n, view, str(v), lay) for n, (view, v, lay) in self.leases.items()]

    def step_member(self, name: str, member: _Member) -> None:
        claims = member.claims
        if member.crashed or member.left or self.now < member.paused_until:
            return
        for key, done in list(member.in_flight.items()):
            if done <= self.now:
                del member.in_flight[key]
        if claims.fenced(self.now) and claims.last_renew is not None:
            member.in_flight.clear()  # rule 4: a fenced member abandons its reconciles
        reachable = self.now >= member.cut_off_until
        if self.now >= member.next_renew and reachable:
            member.next_renew = self.now + RETRY_PERIOD
            claim = claims.to_publish(self.now, member.in_flight)
            written = claims.published_claim if claim is None else claim
            if not written.view and claims.published == frozenset() and claim is not None:
                # Released (rule 5): the Lease goes; the member is done once drained.
                self.leases.pop(name, None)
                member.left = True
                return
            self.version += 1
            self.leases[name] = (written.view, self.version, written.layout)
            claims.renewed(self.now, written.view, written.layout)
            claims.observed(self.now, self.records(), self.layout)
        if not reachable:
            return
        for key in self.rng.sample(self.keys, 8):
            if key not in member.in_flight and claims.may_take(self.now, key):
                member.in_flight[key] = self.now + self.rng.choice([0.5, 1.0, 3.0, 8.0])
                self.taken += 1

    def step(self) -> None:
        names = list(self.members)
        self.rng.shuffle(names)
        for name in names:
            self.step_member(name, self.members[name])
        self.check()
        self.now += STEP

    def check(self) -> None:
        holders: dict[int, str] = {}
        for name, member in self.members.items():
            if member.crashed or member.claims.fenced(self.now):
                continue
            for key in member.in_flight:
                assert key not in holders, (
                    f"t={self.now}: key {key:x} in flight on {holders[key]} and {name}"
                )
                holders[key] = name

    def run(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end:
            self.step()

    def settled_owner_takes_every_key(self) -> bool:
        live = [
            n
            for n, m in self.members.items()
            if not (m.crashed or m.left or self.now < m.paused_until)
        ]
        ring = Ring.of(live, layout=self.layout)
        for key in self.keys:
            owner = ring.owner(key)
            assert owner is not None
            takers = [n for n in live if self.members[n].claims.may_take(self.now, key)]
            if takers != [owner]:
                return False
        return True


def _cluster(names: list[str], seed: int = 0) -> _Cluster:
    cluster = _Cluster(random.Random(seed))
    for name in names:
        cluster.join(name)
    return cluster


def test_claims_a_lone_member_takes_every_key_after_publish_and_read() -> None:
    cluster = _cluster(["a"])
    claims = cluster.members["a"].claims
    assert not claims.may_take(0.0, KEYS[0]), "nothing before its view is published and read"
    cluster.run(1.0)
    assert claims.published == frozenset({"a"})
    assert all(claims.may_take(cluster.now, key) for key in KEYS)


@pytest.mark.parametrize(
    ("story", "action", "settle_s"),
    [
        # A join: the old owners drain the moved keys before the newcomer takes them.
        pytest.param("join", lambda c: c.join("c"), 12.0, id="join"),
        # A graceful leave: drained (reconciles of up to 8 s), then released; the others take
        # its keys within two renews of that, sooner than its lease would have run out.
        pytest.param("leave", lambda c: c.members["b"].claims.stop(), 14.0, id="leave"),
        # A crash: its keys move once its lease has run out on the others' clocks.
        pytest.param(
            "crash",
            lambda c: setattr(c.members["b"], "crashed", True),
            LEASE_DURATION + 6,
            id="crash",
        ),
        # A pause longer than the lease: others take its keys; on waking it is fenced, abandons
        # its reconciles and joins again.
        pytest.param(
            "pause",
            lambda c: setattr(c.members["b"], "paused_until", c.now + 25.0),
            40.0,
            id="pause",
        ),
        # A partition from the API server: it cannot renew, so it stops within renew_deadline;
        # the others take over after lease_duration; healed, it rejoins.
        pytest.param(
            "partition",
            lambda c: setattr(c.members["b"], "cut_off_until", c.now + 30.0),
            45.0,
            id="partition",
        ),
    ],
)
def test_claims_table_of_membership_changes_keeps_one_owner_and_settles(
    story: str, action: object, settle_s: float
) -> None:
    cluster = _cluster(["a", "b"], seed=len(story))
    # Started together, each first claims everything, then drains the other's half (reconciles
    # of up to 8 s) before both publish the ring of two.
    cluster.run(20.0)
    assert cluster.settled_owner_takes_every_key()
    assert callable(action)
    action(cluster)
    cluster.run(settle_s)  # check() ran at every step: never two owners
    assert cluster.settled_owner_takes_every_key(), story


def test_claims_crashed_members_keys_wait_out_the_lease() -> None:
    cluster = _cluster(["a", "b"], seed=3)
    cluster.run(20.0)
    ring_ab = Ring.of(["a", "b"])
    b_key = next(k for k in KEYS if ring_ab.owner(k) == "b")
    cluster.members["b"].crashed = True
    crashed_at = cluster.now
    a = cluster.members["a"].claims
    while not a.may_take(cluster.now, b_key):
        cluster.step()
    # b's last renew was at most one retry period before the crash; a saw it then.
    assert cluster.now >= crashed_at + LEASE_DURATION - RETRY_PERIOD
    assert cluster.now <= crashed_at + LEASE_DURATION + 2 * RETRY_PERIOD + STEP


def test_claims_a_member_draining_a_key_delays_its_new_view() -> None:
    claims = MemberClaims("a", LEASE_DURATION, RENEW_DEADLINE)
    claims.renewed(0.0, frozenset({"a"}))
    claims.observed(0.0, [PeerRecord("a", frozenset({"a"}), "1")])
    claims.observed(1.0, [PeerRecord("b", frozenset({"a", "b"}), "2")])
    moving = next(k for k in KEYS if Ring.of(["a", "b"]).owner(k) == "b")
    staying = next(k for k in KEYS if Ring.of(["a", "b"]).owner(k) == "a")
    assert not claims.may_take(1.0, moving), "a stops taking a moved key at once"
    assert claims.may_take(1.0, staying)
    assert claims.to_publish(1.0, [moving, staying]) is None, "still draining"
    assert claims.to_publish(1.0, [staying]) == Claim(frozenset({"a", "b"}))


def _change_members(cluster: _Cluster, rng: random.Random, change: str, joined: int) -> int:
    """One random schedule step on the members (a join when fewer than two are live); the
    number of members that ever joined after it."""
    live = [n for n, m in cluster.members.items() if not (m.crashed or m.left)]
    if change == "join" or len(live) < 2:
        cluster.join(f"m{joined}")
        return joined + 1
    victim = cluster.members[rng.choice(live)]
    if change == "leave":
        victim.claims.stop()
    elif change == "crash":
        victim.crashed = True
    elif change == "pause":
        victim.paused_until = cluster.now + rng.uniform(1.0, 30.0)
    elif change == "partition":
        victim.cut_off_until = cluster.now + rng.uniform(1.0, 30.0)
    return joined


@pytest.mark.parametrize("seed", range(12))
def test_claims_random_schedules_never_have_two_owners(seed: int) -> None:
    rng = random.Random(seed)
    cluster = _cluster(["m0", "m1", "m2"], seed=seed)
    cluster.run(8.0)
    joined = 3
    for _ in range(10):
        change = rng.choice(["join", "leave", "crash", "pause", "partition", "nothing"])
        joined = _change_members(cluster, rng, change, joined)
        cluster.run(rng.uniform(0.5, 12.0))
    cluster.run(LEASE_DURATION + 30.0)  # quiet: everything settles
    assert cluster.taken > 0
    assert cluster.settled_owner_takes_every_key()


def test_claims_fenced_when_its_own_lease_is_older_than_the_renew_deadline() -> None:
    claims = MemberClaims("a", LEASE_DURATION, RENEW_DEADLINE)
    claims.renewed(0.0, frozenset({"a"}))
    claims.observed(0.0, [])
    assert claims.may_take(RENEW_DEADLINE - 0.1, KEYS[0])
    assert claims.fenced(RENEW_DEADLINE) and not claims.may_take(RENEW_DEADLINE, KEYS[0])
    claims.renewed(RENEW_DEADLINE + 1, frozenset({"a"}))  # the same view: no new read needed
    assert claims.may_take(RENEW_DEADLINE + 1, KEYS[0])


def test_claims_a_new_view_needs_a_read_after_it_was_written() -> None:
    claims = MemberClaims("a", LEASE_DURATION, RENEW_DEADLINE)
    claims.observed(0.0, [PeerRecord("b", frozenset({"b"}), "1")])  # read before publishing
    claims.renewed(0.0, frozenset({"a", "b"}))
    mine = next(k for k in KEYS if Ring.of(["a", "b"]).owner(k) == "a")
    assert not claims.may_take(0.0, mine), "the read came before the write"
    claims.observed(0.5, [PeerRecord("b", frozenset({"a", "b"}), "2")])
    assert claims.may_take(0.5, mine)


# -- layouts ---------------------------------------------------------------------------------
# Namespace hashes that FNV-1a clusters: on the plain ring one member owns every one of them, so
# a layout change moves most keys at once — the hardest case for the claims.
TEAM_KEYS = [hash_field(f"team-{i}") for i in range(60)]


def _fitted(names: list[str]) -> Layout:
    return spread_hashes(TEAM_KEYS, Ring.of(names).arcs())


def _run_until_on(cluster: _Cluster, digest: str, limit_s: float) -> bool:
    """Step until every live member has published ``digest``; whether members were on
    different layouts at some step on the way."""
    mixed = False
    end = cluster.now + limit_s
    while cluster.now < end:
        live = [m for m in cluster.members.values() if not (m.crashed or m.left)]
        on = {m.claims.published_layout for m in live}
        mixed = mixed or len(on) > 1
        if on == {digest}:
            return mixed
        cluster.step()
    raise AssertionError(f"not all on layout {digest!r} after {limit_s}s")


@pytest.mark.parametrize(
    ("story", "action"),
    [
        pytest.param("layout", lambda c: None, id="layout-only"),
        pytest.param("layout+join", lambda c: c.join("d"), id="layout-and-join"),
        pytest.param(
            "layout+crash",
            lambda c: setattr(c.members["b"], "crashed", True),
            id="layout-and-crash",
        ),
        pytest.param(
            "layout+pause",
            lambda c: setattr(c.members["b"], "paused_until", c.now + 6.0),
            id="layout-and-pause",
        ),
    ],
)
def test_claims_layout_change_with_members_on_different_layouts_keeps_one_owner(
    story: str, action: object
) -> None:
    cluster = _cluster(["a", "b", "c"], seed=len(story))
    cluster.keys = TEAM_KEYS
    cluster.run(20.0)
    assert cluster.settled_owner_takes_every_key()
    plain = Ring.of(["a", "b", "c"])
    most = Counter(plain.owner(k) for k in TEAM_KEYS).most_common(1)[0][1]
    assert most >= 45, "the defect: on the plain ring one member owns most of them"
    cluster.layout = _fitted(["a", "b", "c"])
    assert callable(action)
    action(cluster)
    if story in ("layout", "layout+join"):
        assert _run_until_on(cluster, cluster.layout.digest, 20.0), "the table saw mixed layouts"
    cluster.run(LEASE_DURATION + 10.0)  # check() ran at every step: never two owners
    assert cluster.settled_owner_takes_every_key(), story
    if story == "layout":
        owned = Counter(Ring.of(["a", "b", "c"], layout=cluster.layout).owner(k) for k in TEAM_KEYS)
        assert sorted(owned.values()) == [20, 20, 20]


@pytest.mark.parametrize("seed", range(8))
def test_claims_random_schedules_with_layout_changes_never_have_two_owners(seed: int) -> None:
    rng = random.Random(100 + seed)
    cluster = _cluster(["m0", "m1", "m2"], seed=seed)
    cluster.keys = TEAM_KEYS
    cluster.run(8.0)
    joined = 3
    layouts = [IDENTITY, _fitted(["m0", "m1", "m2"]), _fitted(["m0", "m1"]), _fitted(["m3"])]
    for _ in range(10):
        change = rng.choice(["layout", "layout", "join", "leave", "crash", "pause", "nothing"])
        if change == "layout":
            cluster.layout = rng.choice(layouts)  # sometimes back to one a member still uses
        else:
            joined = _change_members(cluster, rng, change, joined)
        cluster.run(rng.uniform(0.5, 6.0))
    cluster.run(LEASE_DURATION + 30.0)
    assert cluster.taken > 0
    assert cluster.settled_owner_takes_every_key()


def test_claims_a_peer_on_an_unknown_layout_blocks_until_it_moves_on() -> None:
    layout = _fitted(["a", "b"])
    both = frozenset({"a", "b"})
    claims = MemberClaims("a", LEASE_DURATION, RENEW_DEADLINE)
    claims.observed(0.0, [], layout)  # the ring's layout Lease, read at the first tick
    claims.renewed(0.0, both, layout.digest)
    claims.observed(0.5, [PeerRecord("b", both, "1", "0123456789ab")], layout)
    assert not any(claims.may_take(0.5, k) for k in TEAM_KEYS), "b may claim anything"
    claims.observed(1.0, [PeerRecord("b", both, "2", layout.digest)], layout)
    ring = Ring.of(both, layout=layout)
    takes = [k for k in TEAM_KEYS if claims.may_take(1.0, k)]
    assert takes == [k for k in TEAM_KEYS if ring.owner(k) == "a"] and takes


def test_claims_a_new_layout_is_a_target_change_drained_then_published() -> None:
    both = frozenset({"a", "b"})
    layout = _fitted(["a", "b"])
    claims = MemberClaims("a", LEASE_DURATION, RENEW_DEADLINE)
    claims.renewed(0.0, both)
    claims.observed(0.0, [PeerRecord("b", both, "1")])
    plain, laid = Ring.of(both), Ring.of(both, layout=layout)
    assert all(plain.owner(k) == "a" for k in TEAM_KEYS)  # a holds every team key
    moving = next(k for k in TEAM_KEYS if laid.owner(k) == "b")
    staying = next(k for k in TEAM_KEYS if laid.owner(k) == "a")
    claims.observed(1.0, [PeerRecord("b", both, "1")], layout)
    assert not claims.may_take(1.0, moving), "a stops taking what the layout moves at once"
    assert claims.may_take(1.0, staying)
    assert claims.to_publish(1.0, [moving]) is None, "still draining"
    assert claims.to_publish(1.0, [staying]) == Claim(both, layout.digest)
    claims.renewed(1.5, both, layout.digest)
    assert not claims.may_take(1.5, staying), "rule 1: a new claim needs a read after it"


def test_claims_uid_keys_sit_on_the_plain_ring_and_a_layout_moves_none() -> None:
    both = frozenset({"a", "b"})
    layout, other = _fitted(["a", "b"]), spread_hashes(TEAM_KEYS)
    claims = MemberClaims("a", LEASE_DURATION, RENEW_DEADLINE)
    claims.observed(0.0, [], layout)
    claims.renewed(0.0, both, layout.digest)
    claims.observed(0.5, [PeerRecord("b", both, "1", layout.digest)], layout)
    plain, laid = Ring.of(both), Ring.of(both, layout=layout)
    assert [claims.may_take(0.5, k, FIELD_UID) for k in KEYS] == [
        plain.owner(k) == "a" for k in KEYS
    ]
    assert [claims.may_take(0.5, k) for k in TEAM_KEYS] == [laid.owner(k) == "a" for k in TEAM_KEYS]
    # A new layout: a uid key in flight does not hold the publish back, a namespace key that
    # moves does.
    claims.observed(1.0, [PeerRecord("b", both, "1", layout.digest)], other)
    uid_key = next(k for k in KEYS if plain.owner(k) == "a" and laid.owner(k) == "b")
    moving = next(
        k for k in TEAM_KEYS if laid.owner(k) == "a" and Ring.of(both, layout=other).owner(k) == "b"
    )
    assert claims.to_publish(1.0, [], [uid_key]) == Claim(both, other.digest)
    assert claims.to_publish(1.0, [moving], [uid_key]) is None
    assert claims.dropped(Claim(both, other.digest), [moving], [uid_key]) == 1
