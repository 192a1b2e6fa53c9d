"""Small, dependency-free helpers every other pycm package builds on.

- :mod:`pycm.util.clock` — the injectable Clock protocol, the real clock and a fake one.
- :mod:`pycm.util.durations` — Go-style durations ("15s", "1m30s") parsed and printed.
- :mod:`pycm.util.backoff` — jittered exponential backoff (client-go ``wait.Backoff``) and the
  reflector's backoff manager.
- :mod:`pycm.util.leasetiming` — leader election's three timings and Kubernetes' defaults for
  them (15s / 10s / 2s), written once.
- :mod:`pycm.util.tasks` — named, guarded asyncio tasks, and cancelling them within a timeout.
- :mod:`pycm.util.escape` — control characters of client text escaped before it is logged.
- :mod:`pycm.util.redact` — the one redaction rule for secrets in flags and configuration.
- :mod:`pycm.util.serving_limits` — the connection gate the manager's ports and the emulator
  serve through (cap, TLS-handshake and request-head timeouts, small TLS footprint);
  :mod:`pycm.util.malloc` — freed heap memory returned to the OS after a burst.

Exceptions::

    ValueError
     └── DurationError   a duration string that does not parse (the message says why)

Test doubles shipped here: :class:`FakeClock`.
"""

from pycm.util.backoff import Backoff, BackoffTimer, ExponentialBackoffManager, jittered
from pycm.util.clock import REAL_CLOCK, Clock, FakeClock, RealClock
from pycm.util.durations import DurationError, duration_arg, format_duration, parse_duration
from pycm.util.escape import escape_control
from pycm.util.redact import WITHHELD, redact_text, redact_value
from pycm.util.tasks import cancel_and_wait, create_guarded_task

__all__ = [
    "REAL_CLOCK",
    "WITHHELD",
    "Backoff",
    "BackoffTimer",
    "Clock",
    "DurationError",
    "ExponentialBackoffManager",
    "FakeClock",
    "RealClock",
    "cancel_and_wait",
    "create_guarded_task",
    "duration_arg",
    "escape_control",
    "format_duration",
    "jittered",
    "parse_duration",
    "redact_text",
    "redact_value",
]
