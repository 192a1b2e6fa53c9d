"""Mapping the API server's Status (and bare HTTP errors) to the exception tree."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pycm.kube import errors
from pycm.kube.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Expired,
    Forbidden,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServerError,
    Timeout,
    TooManyRequests,
    Unauthorized,
    error_from_response,
    error_from_status,
)


def _status(code: int, reason: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "Status", "status": "Failure", "code": code, "reason": reason, **extra}


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        pytest.param(400, "BadRequest", BadRequest, id="400"),
        pytest.param(401, "Unauthorized", Unauthorized, id="401"),
        pytest.param(403, "Forbidden", Forbidden, id="403"),
        pytest.param(404, "NotFound", NotFound, id="404"),
        pytest.param(405, "MethodNotAllowed", MethodNotAllowed, id="405"),
        pytest.param(409, "AlreadyExists", AlreadyExists, id="409-already-exists"),
        pytest.param(409, "Conflict", Conflict, id="409-conflict"),
        pytest.param(410, "Expired", Expired, id="410-expired"),
        pytest.param(410, "Gone", Expired, id="410-gone"),
        pytest.param(422, "Invalid", Invalid, id="422"),
        pytest.param(429, "TooManyRequests", TooManyRequests, id="429"),
        pytest.param(500, "InternalError", ServerError, id="500"),
        pytest.param(503, "ServiceUnavailable", ServerError, id="503"),
        pytest.param(504, "Timeout", Timeout, id="504-timeout"),
        pytest.param(500, "Timeout", Timeout, id="reason-timeout-wins-over-500"),
        pytest.param(409, "", Conflict, id="409-no-reason"),
        pytest.param(404, "", NotFound, id="code-only"),
        pytest.param(502, "", ServerError, id="502-code-only"),
        pytest.param(418, "", ApiError, id="unknown-code"),
    ],
)
def test_error_from_status_maps_reason_and_code(code: int, reason: str, cls: type) -> None:
    err = error_from_status(_status(code, reason, message="m"))
    assert type(err) is cls
    assert (err.code, err.reason, err.message) == (code, reason, "m")


@pytest.mark.parametrize(
    ("headers", "details", "want"),
    [
        pytest.param({"retry-after": "3"}, {}, 3.0, id="header"),
        pytest.param({}, {"retryAfterSeconds": 7}, 7.0, id="details"),
        pytest.param({"retry-after": "2"}, {"retryAfterSeconds": 7}, 2.0, id="header-wins"),
        pytest.param({"retry-after": "soon"}, {}, None, id="unparsable-header"),
        pytest.param({}, {}, None, id="none"),
    ],
)
def test_error_from_status_retry_after_from_header_or_details(
    headers: dict[str, str], details: dict[str, Any], want: float | None
) -> None:
    err = error_from_status(_status(429, "TooManyRequests", details=details), 429, headers)
    assert isinstance(err, TooManyRequests)
    assert err.retry_after == want


def test_error_from_response_non_status_body_uses_generic_message() -> None:
    err = error_from_response(404, b"<html>secret page</html>", {})
    assert isinstance(err, NotFound)
    assert err.message == "the server could not find the requested resource"
    assert "secret" not in str(err)


def test_error_from_response_status_body_is_decoded() -> None:
    body = orjson.dumps(_status(409, "AlreadyExists", message='pods "a" already exists'))
    err = error_from_response(409, body, {})
    assert isinstance(err, AlreadyExists)
    assert str(err) == 'pods "a" already exists'


def test_invalid_causes_lists_field_errors() -> None:
    causes = [{"type": "FieldValueRequired", "field": "spec.containers"}]
    err = error_from_status(_status(422, "Invalid", details={"causes": causes}))
    assert isinstance(err, Invalid)
    assert err.causes == causes


@pytest.mark.parametrize(
    ("err", "check", "want"),
    [
        pytest.param(NotFound("x", code=404), errors.is_not_found, True, id="not-found"),
        pytest.param(Conflict("x", code=409), errors.is_not_found, False, id="not-found-false"),
        pytest.param(Expired("x", code=410), errors.is_expired, True, id="expired"),
        pytest.param(
            AlreadyExists("x"), errors.is_conflict, False, id="already-exists-no-conflict"
        ),
        pytest.param(AlreadyExists("x"), errors.is_already_exists, True, id="already-exists"),
        pytest.param(
            Timeout("Too large resource version: 10, current: 5"),
            errors.is_too_large_resource_version,
            True,
            id="too-large-rv-message",
        ),
        pytest.param(
            Timeout("x", details={"causes": [{"reason": "ResourceVersionTooLarge"}]}),
            errors.is_too_large_resource_version,
            True,
            id="too-large-rv-cause",
        ),
        pytest.param(Timeout("x"), errors.is_too_large_resource_version, False, id="plain-timeout"),
    ],
)
def test_error_helpers_classify(err: Exception, check: Any, want: bool) -> None:
    assert check(err) is want


def test_gone_is_expired() -> None:
    assert errors.Gone is Expired
