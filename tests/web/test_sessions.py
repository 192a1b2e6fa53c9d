"""Sessions and login codes: expiry, single use, and the cap on how many are held."""

from __future__ import annotations

from pycm.util.clock import FakeClock
from web.sessions import LoginCodes, SessionStore, Viewer


def test_session_store_lookup_before_and_after_ttl_expires() -> None:
    clock = FakeClock()
    store = SessionStore(ttl=10, clock=clock)
    sid = store.create(Viewer("alice"))
    clock.advance(9.9)
    assert store.lookup(sid) == Viewer("alice")
    clock.advance(0.2)
    assert store.lookup(sid) is None
    assert len(store) == 0, "an expired session is dropped when looked up"


def test_session_store_ids_are_unguessable_and_distinct() -> None:
    store = SessionStore(clock=FakeClock())
    ids = {store.create(Viewer("alice")) for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) >= 40 for i in ids), "32 random bytes, url-safe"


def test_session_store_at_cap_drops_expired_then_soonest_ending() -> None:
    clock = FakeClock()
    store = SessionStore(ttl=10, clock=clock, max_sessions=3)
    first = store.create(Viewer("a"))
    clock.advance(1)
    second = store.create(Viewer("b"))
    third = store.create(Viewer("c"))
    fourth = store.create(Viewer("d"))
    assert len(store) == 3
    assert store.lookup(first) is None, "the soonest to end made room"
    assert [store.lookup(s) for s in (second, third, fourth)] == [
        Viewer("b"),
        Viewer("c"),
        Viewer("d"),
    ]


def test_session_store_end_forgets_the_session() -> None:
    store = SessionStore(clock=FakeClock())
    sid = store.create(Viewer("alice"))
    store.end(sid)
    store.end(sid)  # twice is fine
    assert store.lookup(sid) is None


def test_login_codes_redeem_once_within_ttl() -> None:
    clock = FakeClock()
    codes = LoginCodes(ttl=60, clock=clock)
    once = codes.new(Viewer("op"))
    late = codes.new(Viewer("op"))
    assert codes.redeem(once) == Viewer("op")
    assert codes.redeem(once) is None
    clock.advance(61)
    assert codes.redeem(late) is None
    assert codes.redeem("made-up") is None
