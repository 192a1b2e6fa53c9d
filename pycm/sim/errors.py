"""Kubernetes ``Status`` errors.

Every failure the emulator answers with is an :class:`APIError`, rendered as a ``v1 Status``
object with kube-apiserver's code, reason and message shape::

    APIError
     ├── bad_request          400 BadRequest
     ├── unauthorized         401 Unauthorized
     ├── forbidden            403 Forbidden
     ├── not_found            404 NotFound
     ├── method_not_allowed   405 MethodNotAllowed
     ├── already_exists       409 AlreadyExists
     ├── conflict             409 Conflict
     ├── expired              410 Expired
     ├── too_large            413 RequestEntityTooLarge
     ├── unsupported_media    415 UnsupportedMediaType
     ├── invalid              422 Invalid (details.causes)
     ├── too_many_requests    429 TooManyRequests (Retry-After)
     ├── internal             500 InternalError
     └── resource_version_set_on_create   500 (no reason: kube's storage error, unconverted)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APIError",
    "Cause",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "internal",
    "invalid",
    "method_not_allowed",
    "not_found",
    "resource_version_set_on_create",
    "status_object",
    "too_large",
    "too_many_requests",
    "unauthorized",
    "unsupported_media",
]

Cause = dict[str, str]


class APIError(Exception):
    """An error the API answers with; ``status()`` is its wire form."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        return status_object(self.code, self.reason, self.message, self.details)


def status_object(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``v1 Status`` (``status: Failure`` for every code >= 300; no ``reason`` when it is
    "", kube's StatusReasonUnknown, which its JSON omits)."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 300 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if not reason:
        del body["reason"]
    if details:
        body["details"] = details
    return body


def _details(kind: str, name: str, group: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    return details


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def unauthorized(message: str = "Unauthorized") -> APIError:
    return APIError(401, "Unauthorized", message)


def forbidden(user: str, verb: str, resource: str, group: str, namespace: str = "") -> APIError:
    what = f'{_qualified(resource, group)} is forbidden: User "{user}" cannot {verb} resource '
    scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    where = f'"{resource}" in API group "{group}"{scope}'
    return APIError(403, "Forbidden", what + where, _details(resource, "", group))


def forbidden_path(user: str, verb: str, path: str) -> APIError:
    message = f'forbidden: User "{user}" cannot {verb} path "{path}"'
    return APIError(403, "Forbidden", message)


def not_found(resource: str, name: str, group: str = "") -> APIError:
    if not name:
        return APIError(404, "NotFound", "the server could not find the requested resource")
    message = f'{_qualified(resource, group)} "{name}" not found'
    return APIError(404, "NotFound", message, _details(resource, name, group))


def method_not_allowed(method: str, path: str) -> APIError:
    return APIError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({method} {path})",
    )


def already_exists(resource: str, name: str, group: str = "") -> APIError:
    message = f'{_qualified(resource, group)} "{name}" already exists'
    return APIError(409, "AlreadyExists", message, _details(resource, name, group))


def conflict(resource: str, name: str, group: str, why: str) -> APIError:
    message = f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}'
    return APIError(409, "Conflict", message, _details(resource, name, group))


def expired(message: str) -> APIError:
    return APIError(410, "Expired", message)


def too_large(limit: int) -> APIError:
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def unsupported_media(accepted: str) -> APIError:
    return APIError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + accepted,
    )


def invalid(kind: str, name: str, causes: list[Cause], group: str = "") -> APIError:
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    message = f'{kind}{"." + group if group else ""} "{name}" is invalid: {summary}'
    details = _details(kind, name, group)
    details["causes"] = causes
    return APIError(422, "Invalid", message, details)


def too_many_requests(message: str, retry_after: int = 1) -> APIError:
    details = {"retryAfterSeconds": retry_after}
    return APIError(429, "TooManyRequests", message, details, retry_after=retry_after)


def internal(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}")


def resource_version_set_on_create() -> APIError:
    """A create whose object carries a resourceVersion. kube's etcd3 storage refuses it with a
    plain Go error that nothing converts to a Status, so the client sees a 500 with no reason
    (fabric8 #734 and java-operator-sdk #2033 quote it: ``code=500, reason=null``)."""
    return APIError(500, "", "resourceVersion should not be set on objects to be created")
