"""API request handlers: status classes and errors."""

from __future__ import annotations

import pytest

from pycm.trace import kinds as k
from tests.trace.state.script import (
    Feed,
)


@pytest.mark.parametrize(
    ("code", "klass", "errors"),
    [
        pytest.param(200, "2xx", 0, id="ok"),
        pytest.param(404, "4xx", 0, id="not-found-not-error"),
        pytest.param(503, "5xx", 1, id="server-error"),
        pytest.param(0, "none", 1, id="no-response"),
    ],
)
def test_api_request_code_class_and_error_counting(code: int, klass: str, errors: int) -> None:
    f = Feed()
    f(
        k.ApiRequestCompleted(verb="get", resource="pods", code=code, rate_limiter_wait_ms=1.5),
        at=0,
        dur_ns=2_000_000,
    )
    api = f.state.snapshot()["api"]["a"]
    assert api["codes"] == {klass: 1}
    assert (api["errors"], api["verbs"], api["rate_limiter_wait_ms"]) == (errors, {"get": 1}, 1.5)
    assert api["latency"]["max"] == 2.0
    assert len(f.state.snapshot()["errors"]) == errors


def test_api_fenced_write_is_counted_apart_and_listed_as_a_recent_error() -> None:
    f = Feed()
    error = "FencedError: create pods refused: last lease renew 2.000s ago, renew deadline 1.5s"
    f(k.ApiRequestCompleted(verb="create", resource="pods", error=error, fenced=True), at=0)
    snapshot = f.state.snapshot()
    api = snapshot["api"]["a"]
    assert (api["fenced"], api["errors"], api["codes"]) == (1, 0, {"none": 1})
    (entry,) = snapshot["errors"]
    assert entry["text"] == f"create pods fenced: {error}"
