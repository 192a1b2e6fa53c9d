"""The ratio rule for a run of root reconciles at once: which of them the ratio drops.

A root reconcile's span id is derived from its bus's id key and its begin's seq
(:func:`pycm.trace.context.root_low`: a Weyl step, then splitmix64's finalizer), and the ratio
rule keeps it when that number is below the bound. Done one reconcile at a time in Python, the
derivation is ~13 big-int operations, ~0.3 µs: most of what the sink spends on a reconcile it
drops. Here it is done for a whole run of seqs in the same ~20 operations, on one int holding
every seq in a lane of its own, so the work per reconcile is the C loops' (~0.1 µs a seq for a
run of 100, against ~0.3 µs one by one).

Lanes are 128 bits: a 64-bit value and room for its product with a 64-bit multiplier, so no
carry reaches the next lane; every step that can leave bits above a lane's low 64 (a product)
or move a lane's bits into its neighbour's (a right shift) is masked back to the low 64 bits of
each lane. The answer comes out as one byte a seq, 1 when the ratio drops it, read off bit 64
of each lane after adding ``2**64 - bound`` (set exactly when the lane's value is at least the
bound). A test holds every answer equal to ``root_low(key, seq) >= bound``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from pycm.trace.context import MIX_1, MIX_2, IdKey, root_low

__all__ = ["MIN_LANES", "RootRatio"]

_MASK_64 = (1 << 64) - 1
_TWO_64 = 1 << 64
# Below this many seqs the constant cost of the big ints (~1 µs) is more than the per-seq
# saving: the seqs are taken one by one (measured: 8 seqs ~0.23 µs each in lanes, ~0.35 µs
# each one by one; 1 seq ~1.2 µs in lanes).
MIN_LANES = 8
_MAX_SHAPES = 64  # run lengths whose constants are kept (then they are made again)

_Shape = tuple[int, int, int, int, Callable[..., bytes], int]


class RootRatio:
    """``decide(seqs)``: for each seq, whether the ratio rule drops the root reconcile whose
    begin has that seq under ``key`` (its span id, as a number, is at least ``bound``), and
    that span id. ``bound`` is the rule's bound on the low 64 bits (2**64: keep every one)."""

    __slots__ = ("_add", "_bound", "_key", "_mult", "_shapes")

    def __init__(self, key: IdKey, bound: int) -> None:
        self._key = key
        self._mult = key[1]
        self._add = key[2]
        self._bound = bound
        # By run length: (a 1 in each lane's lowest bit, each lane's low 64 bits set, the
        # key's addend in each lane, 2**64 - bound in each lane, the seqs' packer, and
        # decide_run's ramp: lane j holding 2 * j * the key's multiplier mod 2**64).
        self._shapes: dict[int, _Shape] = {}

    def decide(self, seqs: list[int]) -> tuple[bytes, bytes]:
        """(drops, lanes): ``drops[j]`` is 1 when the ratio drops the reconcile of
        ``seqs[j]``, else 0; ``lanes`` holds each one's span id in 16 bytes, little-endian
        (``lanes[16 * j : 16 * j + 8][::-1]`` is seq j's span id as the wire has it)."""
        n = len(seqs)
        if n < MIN_LANES:
            key, bound = self._key, self._bound
            lows = [root_low(key, seq) for seq in seqs]
            drops = bytes([low >= bound for low in lows])
            return drops, b"".join([low.to_bytes(16, "little") for low in lows])
        shape = self._shapes.get(n)
        if shape is None:
            shape = self._shape(n)
        ones, low, add, over, pack, _ = shape
        weyl = (int.from_bytes(pack(*seqs), "little") * self._mult + add) & low
        return _finish(weyl, n, ones, low, over)

    def decide_run(self, first: int, n: int) -> tuple[bytes, bytes]:
        """``decide(list(range(first, first + 2 * n, 2)))``: the begins of ``n`` reconciles in
        a row of the log, each begin two seqs after the one before (its end between them), with
        no seq read. Lane j starts as ``first``'s Weyl step plus ``2 * j`` steps, the run's
        ramp (each below 2**64, so the sum leaves no carry in the 128-bit lane)."""
        if n < MIN_LANES:
            return self.decide(list(range(first, first + 2 * n, 2)))
        shape = self._shapes.get(n)
        if shape is None:
            shape = self._shape(n)
        ones, low, _, over, _, ramp = shape
        weyl = (ones * ((first * self._mult + self._add) & _MASK_64) + ramp) & low
        return _finish(weyl, n, ones, low, over)

    def _shape(self, n: int) -> _Shape:
        if len(self._shapes) >= _MAX_SHAPES:
            self._shapes.clear()
        ones = int.from_bytes((b"\x01" + bytes(15)) * n, "little")
        low = ones * _MASK_64
        pack = struct.Struct("<" + "Q8x" * n).pack
        # (2 * j and the multiplier each below 2**64: each product stays in its 128-bit lane.)
        ramp = (int.from_bytes(pack(*range(0, 2 * n, 2)), "little") * self._mult) & low
        shape = (ones, low, ones * self._add, ones * (_TWO_64 - self._bound), pack, ramp)
        self._shapes[n] = shape
        return shape


def _finish(z: int, n: int, ones: int, low: int, over: int) -> tuple[bytes, bytes]:
    """(drops, lanes) of ``n`` lanes holding each seq's Weyl step: splitmix64's finalizer in
    every lane, then bit 64 of each lane plus ``over`` (2**64 - bound) is its drop."""
    z = ((z ^ ((z >> 30) & low)) * MIX_1) & low
    z = ((z ^ ((z >> 27) & low)) * MIX_2) & low
    z ^= (z >> 31) & low
    drops = (((z + over) >> 64) & ones).to_bytes(16 * n, "little")[::16]
    return drops, z.to_bytes(16 * n, "little")
