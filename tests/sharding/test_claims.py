"""Never two owners: the claim rules on a fake clock, as client-go tests its elector — a table of
joins, leaves, pauses and partitions, then random schedules of the same with the invariant
checked at every step: no key is in flight on two members that are not fenced."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from pycm.sharding.claims import Claim, MemberClaims, PeerRecord
from pycm.sharding.layout import IDENTITY, Layout
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


@pytest.mark.parametrize("seed", range(12))
def test_claims_random_schedules_never_have_two_owners(seed: int) -> None:
    rng = random.Random(seed)
    cluster = _cluster(["m0", "m1", "m2"], seed=seed)
    cluster.run(8.0)
    joined = 3
    for _ in range(10):
        live = [n for n, m in cluster.members.items() if not (m.crashed or m.left)]
        change = rng.choice(["join", "leave", "crash", "pause", "partition", "nothing"])
        if change == "join" or len(live) < 2:
            cluster.join(f"m{joined}")
            joined += 1
        else:
            victim = cluster.members[rng.choice(live)]
            if change == "leave":
                victim.claims.stop()
            elif change == "crash":
                victim.crashed = True
            elif change == "pause":
                victim.paused_until = cluster.now + rng.uniform(1.0, 30.0)
            elif change == "partition":
                victim.cut_off_until = cluster.now + rng.uniform(1.0, 30.0)
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
