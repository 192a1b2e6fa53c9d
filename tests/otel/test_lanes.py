"""The ratio rule over a run of root reconciles at once gives, for every seq, the answer and
the span id that :func:`pycm.trace.context.root_low` gives for it alone."""

from __future__ import annotations

import random

import pytest

from pycm.otel.lanes import MIN_LANES, RootRatio
from pycm.trace.context import new_id_key, root_low

_TWO_64 = 1 << 64
# Multipliers near small fractions of 2**64 (the ones the finalizer is there for) and random.
_MULTS = [1, (1 << 63) + 1, ((1 << 64) // 3) | 1, ((1 << 64) // 10) | 1, (1 << 64) - 1]


@pytest.mark.parametrize(
    "bound",
    [0, round(0.1 * _TWO_64), 1 << 63, _TWO_64 - 1, _TWO_64],
    ids=["ratio-0", "ratio-0.1", "ratio-0.5", "just-under-1", "ratio-1"],
)
def test_lanes_decide_each_seq_as_root_low_does(bound: int) -> None:
    rng = random.Random(bound)
    keys = [("0123456789abcdef", mult, rng.getrandbits(64)) for mult in _MULTS]
    keys += [new_id_key() for _ in range(3)]
    for key in keys:
        ratio = RootRatio(key, bound)
        # Run lengths either side of MIN_LANES (one by one below it, in lanes above), seqs
        # consecutive, every other one, scattered, and up to 2**62.
        for n in (1, MIN_LANES - 1, MIN_LANES, 37, 300):
            start = rng.randrange(1, 1 << 40)
            for seqs in (
                list(range(start, start + n)),
                list(range(start, start + 2 * n, 2)),
                sorted(rng.sample(range(1, 1 << 62), n)),
            ):
                drops, lanes = ratio.decide(seqs)
                lows = [root_low(key, seq) for seq in seqs]
                assert list(drops) == [int(low >= bound) for low in lows]
                spans = [lanes[16 * j : 16 * j + 8][::-1] for j in range(n)]
                assert spans == [low.to_bytes(8) for low in lows]


def test_lanes_keep_about_the_ratio_of_a_run() -> None:
    key = new_id_key()
    ratio = RootRatio(key, round(0.1 * _TWO_64))
    drops, _ = ratio.decide(list(range(1, 40_001, 2)))
    assert abs(drops.count(0) / len(drops) - 0.1) < 0.01


@pytest.mark.parametrize("bound", [0, round(0.1 * _TWO_64), 1 << 63, _TWO_64], ids=str)
def test_a_run_of_begins_every_other_seq_is_decided_as_its_seqs_are(bound: int) -> None:
    rng = random.Random(bound + 1)
    keys = [("0123456789abcdef", mult, rng.getrandbits(64)) for mult in _MULTS]
    keys += [new_id_key() for _ in range(3)]
    for key in keys:
        ratio = RootRatio(key, bound)
        for n in (1, MIN_LANES - 1, MIN_LANES, 37, 256, 37):  # (37 again: its ramp is kept)
            first = rng.choice([1, rng.randrange(1, 1 << 40), (1 << 62) + rng.randrange(99)])
            assert ratio.decide_run(first, n) == ratio.decide(list(range(first, first + 2 * n, 2)))
