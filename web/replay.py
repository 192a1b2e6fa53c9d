"""``pycm dashboard --replay FILE``: the lease timings the recorded managers ran with, for the
page's lease gauge and deadline line. (The recording is played by
:class:`pycm.trace.replay.ReplayPlayer`, the player the TUI uses too.)
"""

from __future__ import annotations

from pycm.trace.events import Event
from pycm.trace.kinds import FlagsParsed
from pycm.util.durations import parse_duration

__all__ = ["recorded_lease_timings"]


def recorded_lease_timings(
    events: list[Event], default_renew_deadline_s: float, default_lease_duration_s: float
) -> tuple[float, float]:
    """(renew deadline, lease duration) in seconds the recorded manager ran with: from its
    first ``flags.parsed`` (which lists only the values that differ from the defaults, KCM's:
    the ones given here), else the defaults."""
    renew, lease = default_renew_deadline_s, default_lease_duration_s
    for event in events:
        if not isinstance(event, FlagsParsed):
            continue
        for pair in str(event.changed).split(","):
            name, _, value = pair.partition("=")
            try:
                if name == "leader-elect-renew-deadline":
                    renew = parse_duration(value)
                elif name == "leader-elect-lease-duration":
                    lease = parse_duration(value)
            except ValueError:
                continue
        break
    return renew, lease
