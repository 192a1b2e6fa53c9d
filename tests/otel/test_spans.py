"""API-call spans built from ``api.request`` points: a fenced write is marked and typed by its
error, not by a code an earlier attempt got."""

from __future__ import annotations

from opentelemetry.trace import SpanKind

from pycm.otel.spans import api_span
from pycm.trace.kinds import ApiRequestCompleted

FENCED = "FencedError: create pods refused: last lease renew 2.000s ago, renew deadline 1.5s"


def test_api_span_of_a_fenced_write_is_marked_and_typed_by_its_error() -> None:
    # The first attempt got a 429 with Retry-After; the retry was refused by the fence.
    point = ApiRequestCompleted(
        verb="create",
        method="POST",
        resource="pods",
        code=429,
        retries=1,
        error=FENCED,
        fenced=True,
    )
    span = api_span(point)
    assert span.kind is SpanKind.CLIENT
    assert span.attributes["pycm.fenced"] is True
    assert span.attributes["error.type"] == "FencedError"
    assert span.error == FENCED


def test_api_span_of_a_sent_write_has_no_fenced_attribute() -> None:
    point = ApiRequestCompleted(verb="create", method="POST", resource="pods", code=201)
    span = api_span(point)
    assert "pycm.fenced" not in span.attributes and span.error is None
