"""Rollouts of a 10-replica Deployment (maxSurge 2, maxUnavailable 1) while the manager's API
requests fail (500 and 429 at rate 0.3), lag (0.5 s) and its watches are dropped and compacted
every 2.5 s — the scenario of ``python -m bench soak`` (bench/soak.py), run short.

At every pod and ReplicaSet watch event: live pods ≤ replicas + maxSurge, ready pods ≥ replicas
− maxUnavailable (and the same bounds over the ReplicaSets' sizes and availability); at the end
exactly one ReplicaSet per template, collisionCount untouched."""

from __future__ import annotations

import asyncio

import pytest

from bench.soak import soak

pytestmark = pytest.mark.e2e

ROUNDS, ROUND_S = 3, 8.0
WALL_LIMIT = 115.0  # the bound: 2 minutes on a loaded 2-core machine


@pytest.mark.asyncio
async def test_rollouts_under_api_faults_keep_the_bounds_and_make_one_rs_per_template() -> None:
    async with asyncio.timeout(WALL_LIMIT):
        result = await soak(clean=0, rounds=ROUNDS, round_s=ROUND_S, rollout_timeout=30)
    assert len(result.faulted_rollouts) == ROUNDS
    assert result.violations == [], result.violations[:10]
    assert result.rs_per_template == {f"v{i}": 1 for i in range(ROUNDS + 1)}
    assert result.collision_count == 0
    # The checks ran on real intermediate states.
    assert result.events >= 20 * ROUNDS
