"""The dashboard's sharding ring panel, fed real snapshots and incidents folded from the
synthetic ring trace (tests/support/sharding_trace.py), one source per replica as `pycm
dashboard --server …` would merge them: each member's own record wins, the shares bar, the moves
once each, and the ring's incident lanes; without a ring, neither the panel nor those lanes."""

from __future__ import annotations

import time
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from pycm.sharding.ring import Ring
from pycm.trace.events import Event
from pycm.trace.incidents import Incidents
from pycm.trace.state import State
from tests.browser.conftest import ScriptedDashboard, hello
from tests.support.sharding_trace import ring_trace

pytestmark = pytest.mark.browser

WAIT_MS = 10_000
MEMBERS = ("pycm-0", "pycm-1", "pycm-2", "pycm-3")


def _sources(events: list[Event]) -> list[dict[str, Any]]:
    """One source per replica: the state and incidents of its own member's events."""
    sources = []
    for name in MEMBERS:
        own = [e for e in events if e.instance == name]
        state = State()
        state.apply_all(own)
        sources.append(
            {"name": name, "snapshot": state.snapshot(), "incidents": Incidents().apply_all(own)}
        )
    for source in sources:
        source["incidents"] = [i.to_dict() for i in source["incidents"]]
    return sources


def test_ring_panel_shows_members_shares_and_moves(scripted: ScriptedDashboard, page: Page) -> None:
    # The trace ends now, so the incidents fall inside the timeline's window.
    events = ring_trace(t0=time.time_ns() - 40 * 1_000_000_000)
    page.goto(scripted.page([hello(_sources(events))]))
    panel = page.locator("#ring-panel")
    expect(panel).to_be_visible(timeout=WAIT_MS)
    expect(panel.locator("h3.ring-name")).to_have_text(
        "ring pycm: 3 live of 4 members · drains 3 · fences 1"
    )
    rows = panel.locator("table.ring-members tbody tr")
    expect(rows).to_have_count(4)
    cells = {
        row[0]: row
        for row in (
            [c.strip() for c in rows.nth(i).locator("td").all_inner_texts()] for i in range(4)
        )
    }
    three = Ring.of(MEMBERS[:3])
    assert cells["pycm-0"][:3] == ["pycm-0", "live", f"{three.share('pycm-0') * 100:.1f}%"]
    # keys (its replica sets' and deployments' objects), objects (pods too), drains
    assert cells["pycm-0"][4:6] == ["39", "118"] and cells["pycm-0"][8:10] == ["2", "2500"]
    assert cells["pycm-1"][10] == "1"
    # pycm-0's stream only saw pycm-3 in its view; pycm-3's own record (it left) wins.
    assert cells["pycm-3"][1] == "left"
    # The bar: the three live members' shares side by side, filling the ring.
    shares = panel.locator(".share-bar .share")
    expect(shares).to_have_count(3)
    # Measured in one evaluation: the panel is redrawn every second, so element handles taken
    # one by one can be detached in between.
    widths, whole = page.evaluate(
        """() => {
          const bar = document.querySelector('#ring-panel .share-bar');
          const segs = [...bar.querySelectorAll('.share')];
          return [segs.map((s) => s.getBoundingClientRect().width),
                  bar.getBoundingClientRect().width];
        }"""
    )
    assert len(widths) == 3 and sum(widths) == pytest.approx(whole, abs=2)
    three_shares = [three.share(m) for m in MEMBERS[:3]]
    assert [w / whole for w in widths] == pytest.approx(three_shares, abs=0.01)
    # Moves: the newest ten of all the members' reports, in time order.
    moves = panel.locator("ol.ring-moves li")
    expect(moves).to_have_count(10)
    texts = moves.all_inner_texts()
    assert any("pycm-3 left after 20s on the ring" in t for t in texts)
    assert texts == sorted(texts)  # each line starts with its time of day
    # The incident timeline has the ring's lanes, with their marks.
    lanes = page.locator("#incident-lanes")
    for kind in ("shard_move", "shard_drain", "shard_fenced"):
        expect(lanes.locator(f'.lane[data-type="{kind}"] .marker')).not_to_have_count(0)


def test_ring_panel_and_lanes_stay_hidden_without_a_ring(
    scripted: ScriptedDashboard, page: Page
) -> None:
    now = time.time_ns()
    snapshot = {"v": 1, "now_ts": now, "instances": {"r": {"role": "leader", "last_seq": 1}}}
    lease = {
        "ts": now - 10**9,
        "instance": "r",
        "type": "lease",
        "text": "r acquired x",
        "trace_id": "",
    }
    page.goto(scripted.page([hello([{"name": "r", "snapshot": snapshot, "incidents": [lease]}])]))
    expect(page.locator('#incident-lanes .lane[data-type="lease"] .marker')).to_have_count(
        1, timeout=WAIT_MS
    )
    expect(page.locator("#ring-panel")).to_be_hidden()
    expect(page.locator('#incident-lanes .lane[data-type^="shard_"]')).to_have_count(0)
