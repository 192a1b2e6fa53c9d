"""ServiceAccount tokens: the TokenRequest subresource and the bound tokens it issues.

``POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`` with a TokenRequest answers 201
with ``status.token`` and ``status.expirationTimestamp``, as kube-apiserver does when it can
sign service-account tokens. The token authenticates as ``system:serviceaccount:<ns>:<name>``
(uid: the ServiceAccount's uid; groups ``system:serviceaccounts``,
``system:serviceaccounts:<ns>`` and ``system:authenticated``) until it expires or its
ServiceAccount is deleted or replaced (a bound token names the object's uid, so a re-created
account does not revive it).

Validation as kube's: ``spec.expirationSeconds`` defaults to 3600 and must be at least 600 (ten
minutes) and at most 2^32; the ServiceAccount must exist (404 otherwise). Tokens are random and
opaque (not JWTs): only the emulator can read them, through its authenticator or a TokenReview.
"""

from __future__ import annotations

import secrets
from typing import Any

from pycm.sim import errors
from pycm.sim.auth import TokenAuthenticator, UserInfo
from pycm.sim.objects import Obj, rfc3339
from pycm.sim.resources import REGISTRY
from pycm.sim.store import Store
from pycm.sim.validation import invalid_value

__all__ = [
    "DEFAULT_EXPIRATION_SECONDS",
    "MIN_EXPIRATION_SECONDS",
    "service_account_username",
    "token_request",
]

DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
_MAX_EXPIRATION_SECONDS = 1 << 32
_SERVICE_ACCOUNTS = REGISTRY.resources[("", "serviceaccounts")]


def service_account_username(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def _expiration(spec: dict[str, Any], name: str) -> int:
    value = spec.get("expirationSeconds", DEFAULT_EXPIRATION_SECONDS)
    field = "spec.expirationSeconds"
    if isinstance(value, bool) or not isinstance(value, int):
        cause = invalid_value(field, value, "must be an integer number of seconds")
    elif value < MIN_EXPIRATION_SECONDS:
        cause = invalid_value(field, value, "may not specify a duration less than 10 minutes")
    elif value > _MAX_EXPIRATION_SECONDS:
        cause = invalid_value(field, value, "may not specify a duration larger than 2^32 seconds")
    else:
        return value
    raise errors.invalid("TokenRequest", name, [cause], "authentication.k8s.io")


def token_request(
    store: Store, authenticator: TokenAuthenticator, namespace: str, name: str, body: Obj
) -> Obj:
    """Issue a token for ServiceAccount ``namespace/name`` and answer the TokenRequest."""
    spec = body.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise errors.bad_request("TokenRequest spec must be an object")
    seconds = _expiration(spec, name)
    account = store.peek(_SERVICE_ACCOUNTS, namespace, name)
    if account is None:
        raise errors.not_found("serviceaccounts", name)
    uid = str(account["metadata"].get("uid", ""))
    clock = store.clock
    expires_ns = clock.wall_ns() + seconds * 1_000_000_000

    def valid() -> bool:
        if clock.wall_ns() >= expires_ns:
            return False
        current = store.peek(_SERVICE_ACCOUNTS, namespace, name)
        return current is not None and current["metadata"].get("uid") == uid

    token = secrets.token_urlsafe(32)
    user = UserInfo(
        service_account_username(namespace, name),
        uid,
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}"),
    )
    authenticator.add_bound(token, user, valid)
    audiences = spec.get("audiences")
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": rfc3339(clock.wall_ns()),
        },
        "spec": {
            "audiences": audiences if isinstance(audiences, list) else [],
            "expirationSeconds": seconds,
            "boundObjectRef": spec.get("boundObjectRef"),
        },
        "status": {"token": token, "expirationTimestamp": rfc3339(expires_ns)},
    }
