"""``wait_for``: poll a condition with a bound, and fail saying what was last seen.

Tests of controllers wait for the cluster to converge; a bare timeout says nothing about why it
did not. :func:`wait_for` fails with the predicate's name, the last value it saw and — when a
``describe`` callback is given (:meth:`pycm.testing.Cluster.wait_for_object` gives one) — the
object's last state and its history in the running managers (what reconciled it and why).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["WaitTimeout", "wait_for"]

T = TypeVar("T")

# Between polls: short enough that a test ends soon after the condition holds, long enough
# not to load a small machine with requests.
POLL_INTERVAL = 0.05


class WaitTimeout(AssertionError):
    """The condition did not hold in time (an AssertionError: pytest shows it as a failure)."""


def wait_for(
    predicate: Callable[[], T],
    timeout: float = 10.0,
    *,
    what: str = "",
    describe: Callable[[], str] | None = None,
    interval: float = POLL_INTERVAL,
) -> T:
    """Call ``predicate`` until it returns something truthy, and return that; after
    ``timeout`` seconds raise :class:`WaitTimeout` naming ``what`` (else the predicate), the
    last value, and ``describe()``'s text (the object's last state and history)."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    error: BaseException | None = None
    while True:
        try:
            last = predicate()
            error = None
        except Exception as exc:  # a read that fails now may succeed later (a 404 at first)
            last, error = None, exc
        if last and last is not None:
            return last
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    name = what or getattr(predicate, "__name__", "") or repr(predicate)
    lines = [f"timed out after {timeout:g}s waiting for {name}"]
    lines.append(
        f"last: {type(error).__name__}: {error}" if error is not None else f"last: {last!r}"
    )
    if describe is not None:
        try:
            lines.append(describe())
        except Exception as exc:
            lines.append(f"(could not describe the object: {type(exc).__name__}: {exc})")
    raise WaitTimeout("\n".join(lines))
