"""pycm.util's curated surface re-exports the main names of its modules, unchanged."""

from __future__ import annotations

import pycm.util
from pycm.util import backoff, clock, durations, escape, redact, tasks


def test_util_all_names_are_reexported_from_their_modules() -> None:
    modules = [backoff, clock, durations, escape, redact, tasks]
    for name in pycm.util.__all__:
        owners = [m for m in modules if name in m.__all__]
        assert len(owners) == 1, name
        assert getattr(pycm.util, name) is getattr(owners[0], name), name
