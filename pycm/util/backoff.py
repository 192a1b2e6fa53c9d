"""Jittered exponential backoff, as client-go's ``wait.Backoff`` and ``BackoffManager``.

- :class:`Backoff` is the immutable policy (initial delay, growth factor, jitter, cap, steps);
  :meth:`Backoff.timer` starts a :class:`BackoffTimer`, the mutable run of delays, which is also
  an iterator (a ``for`` loop over it stops when the steps run out).
- :class:`ExponentialBackoffManager` is what the reflector uses between failed list/watch
  attempts: delays grow while failures keep coming, and start again from the initial delay once
  ``reset_after`` seconds pass without a backoff. It reads time from a
  :class:`~pycm.util.clock.Clock`.
- :func:`jittered` is ``wait.Jitter``.

Randomness is injected (``rng: random.Random``) so tests can seed it. Delays are float seconds.
Departing from client-go on purpose: reaching ``cap`` does not use up the remaining steps (in
client-go it sets ``Steps`` to zero, which silently ends a ``wait.ExponentialBackoff`` loop),
and ``steps=None`` means unbounded rather than "never grow".
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["Backoff", "BackoffTimer", "ExponentialBackoffManager", "jittered"]

_DEFAULT_RNG = random.Random()


def jittered(duration: float, max_factor: float, rng: random.Random | None = None) -> float:
    """A random delay in ``[duration, duration * (1 + max_factor))`` (client-go ``wait.Jitter``).

    A ``max_factor`` of zero or less means 1.0, as in client-go.
    """
    if max_factor <= 0.0:
        max_factor = 1.0
    return duration + (rng or _DEFAULT_RNG).random() * max_factor * duration


@dataclass(frozen=True, slots=True)
class Backoff:
    """An exponential backoff policy.

    The n-th delay (from 0) is ``initial * factor**n``, held at ``cap`` once it would exceed it,
    then jittered by up to ``jitter`` times itself (so with jitter a delay may exceed ``cap``, as
    in client-go). ``factor`` 0 means constant delays (client-go's convention). ``steps`` bounds
    how many delays a timer hands out; ``None`` is unbounded.
    """

    initial: float
    factor: float = 2.0
    jitter: float = 0.0
    cap: float | None = None
    steps: int | None = None

    def __post_init__(self) -> None:
        problems = [
            f"{name} must be a finite number >= 0, got {value!r}"
            for name, value in (
                ("initial", self.initial),
                ("factor", self.factor),
                ("jitter", self.jitter),
            )
            if not (math.isfinite(value) and value >= 0)
        ]
        if self.cap is not None and not (math.isfinite(self.cap) and self.cap >= self.initial):
            problems.append(
                f"cap must be finite and >= initial ({self.initial!r}), got {self.cap!r}"
            )
        if self.steps is not None and self.steps < 0:
            problems.append(f"steps must be >= 0 or None, got {self.steps!r}")
        if problems:
            raise ValueError("invalid backoff: " + "; ".join(problems))

    def timer(self, rng: random.Random | None = None) -> BackoffTimer:
        """A fresh run of delays under this policy."""
        return BackoffTimer(self, rng)


class BackoffTimer(Iterator[float]):
    """The delays of one :class:`Backoff` run, in order; :meth:`reset` starts over."""

    def __init__(self, backoff: Backoff, rng: random.Random | None = None) -> None:
        self._backoff = backoff
        self._rng = rng or _DEFAULT_RNG
        # The un-jittered delay the next step hands out; never above backoff.cap.
        self._current = backoff.initial
        # Delays handed out since the last reset; never above backoff.steps.
        self._taken = 0

    @property
    def backoff(self) -> Backoff:
        return self._backoff

    @property
    def attempts(self) -> int:
        """How many delays have been handed out since the start or the last reset."""
        return self._taken

    @property
    def exhausted(self) -> bool:
        """Whether the steps are used up (never, for unbounded policies)."""
        steps = self._backoff.steps
        return steps is not None and self._taken >= steps

    def next_delay(self) -> float | None:
        """The next delay in seconds, or ``None`` once the steps are used up."""
        if self.exhausted:
            return None
        b = self._backoff
        delay = self._current
        self._taken += 1
        if b.factor != 0:
            grown = delay * b.factor
            self._current = grown if b.cap is None else min(grown, b.cap)
        return jittered(delay, b.jitter, self._rng) if b.jitter > 0 else delay

    def reset(self) -> None:
        """Start again from the initial delay with all steps available."""
        self._current = self._backoff.initial
        self._taken = 0

    def __next__(self) -> float:
        delay = self.next_delay()
        if delay is None:
            raise StopIteration
        return delay


class ExponentialBackoffManager:
    """client-go's ``NewExponentialBackoffManager``: backoff that forgets after a quiet period.

    :meth:`next` returns the delay to wait before the next attempt. If more than ``reset_after``
    seconds passed since the previous call, the delays start again from ``initial``. The
    defaults are the reflector's (client-go ``NewReflectorWithOptions``): 800 ms doubling to a
    30 s cap with full jitter, reset after 2 minutes without a failure — quick retries for a
    blip, while a down API server is not hammered in step by every informer of every replica.
    """

    def __init__(
        self,
        *,
        initial: float = 0.8,
        max: float = 30.0,  # client-go: maxBackoff (shadows the builtin here only)
        reset_after: float = 120.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        clock: Clock = REAL_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        self._timer = Backoff(initial, factor=factor, jitter=jitter, cap=max).timer(rng)
        self._reset_after = reset_after
        self._clock = clock
        # Monotonic time of the previous next() call (of construction, before the first).
        self._last_backoff_start = clock.monotonic()

    def next(self) -> float:
        """The next delay in seconds, after resetting if the last backoff is long past."""
        now = self._clock.monotonic()
        if now - self._last_backoff_start > self._reset_after:
            self._timer.reset()
        self._last_backoff_start = now
        return next(self._timer)  # unbounded: steps never run out
