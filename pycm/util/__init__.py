"""Small, dependency-free helpers every other pycm package builds on.

- :mod:`pycm.util.clock` — the injectable Clock protocol, the real clock and a fake one.
- :mod:`pycm.util.durations` — Go-style durations ("15s", "1m30s") parsed and printed.
- :mod:`pycm.util.backoff` — jittered exponential backoff.
- :mod:`pycm.util.tasks` — named, guarded asyncio tasks.
"""
