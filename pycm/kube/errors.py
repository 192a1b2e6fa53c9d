"""The client's exceptions, mapped from the API server's Status (reason, then code).

Their place in pycm's one tree is drawn in :mod:`pycm.errors` (the root, ``PycmError``)::

    PycmError
     └── KubeError                    anything the client raises about a request
          ├── ApiError                the server answered with an error (code, reason, message,
          │    │                      details, retry_after, status)
          │    ├── BadRequest          400
          │    ├── Unauthorized        401
          │    ├── Forbidden           403
          │    ├── NotFound            404
          │    ├── MethodNotAllowed    405
          │    ├── AlreadyExists       409, reason AlreadyExists
          │    ├── Conflict            409 (any other reason: a resourceVersion conflict)
          │    ├── Expired             410 / reason Expired or Gone (``Gone`` is the same class)
          │    ├── Invalid             422 (``causes`` lists the field errors)
          │    ├── TooManyRequests     429 (``retry_after`` from Retry-After or details)
          │    ├── Timeout             504 / reason Timeout / client-side timeout (code 0)
          │    ├── ServerError         any other 5xx (and reasons InternalError, ServerTimeout)
          │    └── StatusError         a Status met outside the HTTP pipeline, typed by its code
          │                            and reason only (a watch ERROR event the informers
          │                            decode themselves; a test double's scripted failure)
          ├── TransportError           no answer: connection refused or reset, protocol error
          └── FencedError              a write refused before it was sent: this replica's
                                       lease renew is older than its renew deadline

The reason wins over the code, as apimachinery's ``ReasonForError`` does: a 500 with reason
``Timeout`` is a :class:`Timeout`, a 409 with reason ``AlreadyExists`` an :class:`AlreadyExists`.
A body that is not a Status (a proxy's HTML page) maps by code alone, and its message is a short
generic one — response bodies never end up in messages or trace events.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from pycm.errors import PycmError

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Expired",
    "FencedError",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeError",
    "MethodNotAllowed",
    "NotFound",
    "ServerError",
    "StatusError",
    "Timeout",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "error_from_response",
    "error_from_status",
    "is_already_exists",
    "is_conflict",
    "is_expired",
    "is_forbidden",
    "is_invalid",
    "is_not_found",
    "is_timeout",
    "is_too_large_resource_version",
    "is_too_many_requests",
    "is_unauthorized",
    "parse_retry_after",
]


class KubeError(PycmError):
    """Base of everything the client raises about a request."""


class TransportError(KubeError):
    """The request got no HTTP answer (connection refused or reset, TLS or protocol failure)."""


class FencedError(KubeError):
    """A write was refused by the client before it was sent: the replica's last lease renew is
    older than its renew deadline (:class:`pycm.kube.fence.WriteFence`), so it may no longer
    lead. Nothing reached the server; the reconcile that made it fails (and is retried once
    the lease is renewed, or never: the process exits on the loss)."""

    def __init__(self, verb: str, resource: str, age: float | None, renew_deadline: float) -> None:
        held = "not leading" if age is None else f"last lease renew {age:.3f}s ago"
        super().__init__(
            f"{verb} {resource} refused: {held}, renew deadline {renew_deadline:g}s "
            "(a replica that may have lost the lease does not write)"
        )
        self.verb = verb
        self.resource = resource
        self.age = age
        self.renew_deadline = renew_deadline


class ApiError(KubeError):
    """The API server answered with an error Status."""

    def __init__(
        self,
        message: str,
        *,
        code: int = 0,
        reason: str = "",
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
        status: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.details: Mapping[str, Any] = details or {}
        self.retry_after = retry_after
        self.status: Mapping[str, Any] = status or {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, reason={self.reason!r}, {self.message!r})"


class BadRequest(ApiError):
    pass


class Unauthorized(ApiError):
    pass


class Forbidden(ApiError):
    pass


class NotFound(ApiError):
    pass


class MethodNotAllowed(ApiError):
    pass


class AlreadyExists(ApiError):
    pass


class Conflict(ApiError):
    pass


class Expired(ApiError):
    """410 Gone: the requested resourceVersion (or continue token) is too old; relist."""


Gone = Expired


class Invalid(ApiError):
    @property
    def causes(self) -> list[Mapping[str, Any]]:
        """The field errors: ``[{"type", "message", "field"}, ...]``."""
        causes = self.details.get("causes")
        return list(causes) if isinstance(causes, list) else []


class StatusError(ApiError):
    """An API ``Status`` failure met outside the client's HTTP pipeline: an ERROR event of a
    watch the informers decode themselves (:class:`~pycm.cache.sharing_decoder.SharingDecoder`),
    or a test double's scripted failure. Not mapped to a subclass: ``code`` is the HTTP code
    (410 Expired, 429 TooManyRequests, 500, ...), ``reason`` the Status reason (``Expired``,
    ``Gone``, ...) and ``message`` the Status message; the reflector classifies it by those."""

    def __init__(self, code: int, reason: str = "", message: str = "") -> None:
        super().__init__(
            f"{code} {reason}: {message}" if reason else f"{code}: {message}",
            code=code,
            reason=reason,
        )
        self.message = message

    @classmethod
    def from_status(cls, status: Mapping[str, Any]) -> StatusError:
        error = cls(
            int(status.get("code") or 500),
            str(status.get("reason") or ""),
            str(status.get("message") or ""),
        )
        error.status = status
        return error


class TooManyRequests(ApiError):
    pass


class Timeout(ApiError):
    pass


class ServerError(ApiError):
    pass


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Expired,
    "Expired": Expired,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "Timeout": Timeout,
    "ServerTimeout": ServerError,
    "InternalError": ServerError,
    "ServiceUnavailable": ServerError,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Expired,
    422: Invalid,
    429: TooManyRequests,
    504: Timeout,
}

# What client-go says for a non-Status error body, by code (newUnstructuredResponseError).
_GENERIC = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "the server does not allow access to the requested resource",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    410: "the server has asked for the client to start over",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    500: "an error on the server has prevented the request from succeeding",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted",
}


def _class_for(code: int, reason: str) -> type[ApiError]:
    cls = _BY_REASON.get(reason)
    if cls is not None:
        return cls
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls
    if code >= 500:
        return ServerError
    return ApiError


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header holding an integer (what the API server sends)."""
    if not value:
        return None
    try:
        seconds = int(value.strip())
    except ValueError:
        return None
    return float(seconds) if seconds >= 0 else None


def error_from_status(
    status: Mapping[str, Any], code: int = 0, headers: Mapping[str, str] | None = None
) -> ApiError:
    """The exception for a Status object (from an error response or a watch ERROR event)."""
    code = int(status.get("code") or code or 0)
    reason = str(status.get("reason") or "")
    details = status.get("details")
    details = details if isinstance(details, Mapping) else {}
    message = str(status.get("message") or _GENERIC.get(code) or reason or f"HTTP {code}")
    retry_after = parse_retry_after((headers or {}).get("retry-after"))
    if retry_after is None and isinstance(details.get("retryAfterSeconds"), int | float):
        retry_after = float(details["retryAfterSeconds"])
    cls = _class_for(code, reason)
    return cls(
        message,
        code=code,
        reason=reason,
        details=details,
        retry_after=retry_after,
        status=status,
    )


def error_from_response(code: int, body: bytes, headers: Mapping[str, str]) -> ApiError:
    """The exception for an HTTP error response (a Status body if there is one)."""
    status: Any = None
    if body[:1] == b"{":
        try:
            status = orjson.loads(body)
        except orjson.JSONDecodeError:
            status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        return error_from_status(status, code, headers)
    message = _GENERIC.get(code) or (
        _GENERIC[500] if code >= 500 else f"unexpected HTTP status {code}"
    )
    return error_from_status({"code": code, "message": message}, code, headers)


def is_not_found(e: BaseException) -> bool:
    return isinstance(e, NotFound)


def is_already_exists(e: BaseException) -> bool:
    return isinstance(e, AlreadyExists)


def is_conflict(e: BaseException) -> bool:
    return isinstance(e, Conflict)


def is_expired(e: BaseException) -> bool:
    """410 Gone / reason Expired: relist (the reflector's check)."""
    return isinstance(e, Expired)


def is_invalid(e: BaseException) -> bool:
    return isinstance(e, Invalid)


def is_forbidden(e: BaseException) -> bool:
    return isinstance(e, Forbidden)


def is_unauthorized(e: BaseException) -> bool:
    return isinstance(e, Unauthorized)


def is_too_many_requests(e: BaseException) -> bool:
    return isinstance(e, TooManyRequests)


def is_timeout(e: BaseException) -> bool:
    return isinstance(e, Timeout)


def is_too_large_resource_version(e: BaseException) -> bool:
    """The "Too large resource version" Timeout the reflector answers with a consistent relist."""
    if not isinstance(e, Timeout):
        return False
    causes = e.details.get("causes")
    if isinstance(causes, list):
        for cause in causes:
            if isinstance(cause, Mapping) and cause.get("reason") == "ResourceVersionTooLarge":
                return True
    return "too large resource version" in e.message.lower()
