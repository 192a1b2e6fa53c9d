"""The clock-skew fault end to end: a standby whose clock runs 10× fast
(``--debug-clock-rate=10``) takes a healthy lease — leader election's documented limit — and the
old leader, whose own renew is still fresh, is fenced at its next renew attempt and exits.

With the e2e timings (lease 2 s, renew deadline 1.5 s, retry 0.5 s) the standby's 2 s lease
lasts 0.2 s of real time, less than the 0.5 s between the leader's renewals, so it judges the
lease expired although nothing is wrong (it steals from any rate above LeaseDuration /
RetryPeriod = 4×; it is unsafe, takeover inside the leader's term, above LeaseDuration /
RenewDeadline ≈ 1.33× if the leader is also cut off; docs/operations.md). 10×, not just above
4×: the standby steals only inside the part of each renew period after its own lease has run
out (0.2–0.5 s here, with its retries every 0.05–0.11 s); at 5× that was the last 0.1 s of each
period, which a loaded standby, slow to see each renewal, could miss for the test's whole bound.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD, SLACK, Cluster

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

FAST = 10.0


async def test_fast_clock_standby_takes_a_healthy_lease_old_leader_fenced_and_exits(
    cluster: Cluster,
) -> None:
    (old,) = await cluster.start_all("replica-a")
    await cluster.leases.wait_for(lambda h: h == "replica-a", timeout=10)
    fast = await cluster.start("replica-b", f"--debug-clock-rate={FAST:g}")
    await cluster.wait_serving(fast)
    joined = time.monotonic()
    took = await cluster.leases.wait_for(
        lambda h: h == "replica-b", timeout=LEASE_DURATION + SLACK + 5, after=joined
    )
    # Inside the leader's term: its last renewal had landed less than a lease duration before
    # (an honest standby waits a full LeaseDuration without seeing a change).
    last_a = max(s.at for s in cluster.leases.history if s.holder == "replica-a" and s.at < took)
    assert took - last_a < LEASE_DURATION, f"took {took - last_a:.2f}s after the last renewal"
    assert old.process.returncode is None, "the leader was healthy until the steal"
    # The old leader learns it at its next renew attempt (not_holder: its gate closes there)
    # and exits on the loss, as KCM does.
    code = await old.exit_code(RETRY_PERIOD + RENEW_DEADLINE + SLACK + 5)
    assert code not in (0, None), old.log()
    reasons = [e["reason"] for e in old.events("lease.renew_failed")]
    assert "not_holder" in reasons, reasons
    assert old.events("lease.lost")
    assert "debug-clock-rate" in fast.log_file.read_text()  # the fault says it is on
