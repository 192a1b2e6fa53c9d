"""``--use-service-account-credentials``: each controller talks to the API server as its own
service account, ``kube-system/<client name>`` — the name its init function asks the client
builder for, ``deployment-controller`` or ``replicaset-controller`` as in KCM — the way KCM's
dynamic client builder does.

For each client a controller asks for:

1. (with each token) get-or-create the ServiceAccount (GET; on NotFound make sure the
   namespace exists — errors tolerated, the manager may not be allowed to create namespaces —
   then create it; on AlreadyExists, another replica won the race: GET it again);
2. build a client from the root configuration stripped of its credentials (KCM's
   AnonymousClientConfig: server and CA only) whose bearer token comes from a
   :class:`ServiceAccountTokenSource`, with ``system:serviceaccount:<ns>:<name>`` appended to
   its user agent;
3. once every controller is initialised, ask for each first token, so a cluster that cannot
   issue tokens stops the manager with a clear message instead of failing every request later.

The token source asks for a TokenRequest of ``expirationSeconds`` 3600 and caches the token
until 80 % of its lifetime has passed (20 % leeway; a lifetime under ten minutes — clock skew —
counts as ten); failures are retried with backoff (0.5 s doubling, four attempts), each attempt
re-checking the account. A 401 drops the cached token so the next request fetches a new one.
The informers keep the root client (as in KCM). Tokens never appear in traces or logs: the
``controller.token_requested`` event carries names, lifetimes and errors only.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import orjson

from pycm.kube import Client
from pycm.kube.errors import AlreadyExists, KubeError, NotFound
from pycm.kube.resources import NAMESPACES, Resource
from pycm.trace.bus import Bus
from pycm.trace.context import error_text
from pycm.trace.kinds import ControllerTokenRequested
from pycm.util.clock import Clock

__all__ = [
    "SERVICE_ACCOUNTS",
    "SERVICE_ACCOUNT_NAMESPACE",
    "ServiceAccountTokenSource",
    "get_or_create_service_account",
    "username_for",
]

SERVICE_ACCOUNTS = Resource(
    "", "v1", "serviceaccounts", "ServiceAccount", True, frozenset({"token"})
)
# KCM keeps the controllers' accounts in kube-system, a namespace ordinary users cannot read.
SERVICE_ACCOUNT_NAMESPACE = "kube-system"
DEFAULT_EXPIRATION_SECONDS = 3600
LEEWAY_PERCENT = 20
MIN_LIFETIME_S = 600.0
# client-go's wait.Backoff{Duration: 500ms, Factor: 2, Steps: 4}: four tries, 0.5/1/2 s apart.
_BACKOFF_START_S = 0.5
_BACKOFF_STEPS = 4


def username_for(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


async def get_or_create_service_account(
    client: Client, namespace: str, name: str
) -> dict[str, Any]:
    try:
        return await client.get(SERVICE_ACCOUNTS, name, namespace=namespace)
    except NotFound:
        pass
    try:
        await client.get(NAMESPACES, namespace)
    except NotFound:
        try:
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        except KubeError:
            pass  # AlreadyExists, or not allowed: the account's create says what matters
    except KubeError:
        pass
    body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
    try:
        return await client.create(SERVICE_ACCOUNTS, body, namespace=namespace)
    except AlreadyExists:
        return await client.get(SERVICE_ACCOUNTS, name, namespace=namespace)


def _parse_time(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class ServiceAccountTokenSource:
    """A cached, resettable token of one service account, requested through ``root``.

    Invariant: ``_token`` is None or was issued for this account and is used until the wall
    clock reaches ``_refresh_at`` (seconds since the epoch)."""

    def __init__(
        self,
        root: Client,
        namespace: str,
        name: str,
        *,
        controller: str,
        clock: Clock,
        bus: Bus,
        expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
        leeway_percent: int = LEEWAY_PERCENT,
    ) -> None:
        self._root = root
        self.namespace = namespace
        self.name = name
        self._controller = controller
        self._clock = clock
        self._bus = bus
        self._expiration_seconds = expiration_seconds
        self._leeway = leeway_percent / 100
        self._token: str | None = None
        self._refresh_at = 0.0
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:  # never the token
        return f"ServiceAccountTokenSource({self.namespace}/{self.name})"

    def _now(self) -> float:
        return self._clock.wall_ns() / 1e9

    async def token(self) -> str:
        token = self._token
        if token is not None and self._now() < self._refresh_at:
            return token
        async with self._lock:  # one TokenRequest at a time, however many requests wait
            if self._token is None or self._now() >= self._refresh_at:
                await self._fetch()
            assert self._token is not None
            return self._token

    def reset(self) -> None:
        self._token = None

    async def _fetch(self) -> None:
        delay = _BACKOFF_START_S
        last = ""
        for attempt in range(1, _BACKOFF_STEPS + 1):
            try:
                await get_or_create_service_account(self._root, self.namespace, self.name)
                issued = await self._request()
            except (KubeError, ValueError, KeyError, TypeError) as exc:
                last = error_text(exc)
                self._event(attempt, error=last)
                if attempt < _BACKOFF_STEPS:
                    await self._clock.sleep(delay)
                    delay *= 2
                continue
            token, expires_at = issued
            now = self._now()
            lifetime = max(expires_at - now, MIN_LIFETIME_S)  # skewed clocks: pin to 10 min
            self._token = token
            self._refresh_at = now + lifetime * (1 - self._leeway)
            self._event(attempt, expires_in=lifetime, refresh_in=self._refresh_at - now)
            return
        raise KubeError(f"failed to get a token for {self.namespace}/{self.name}: {last}")

    async def _request(self) -> tuple[str, float]:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": self._expiration_seconds},
        }
        response = await self._root.request(
            "POST",
            SERVICE_ACCOUNTS.path(self.namespace, self.name, "token"),
            content=orjson.dumps(body),
            content_type="application/json",
            accept="application/json",
            verb="create",
        )
        status = response.json()["status"]
        token = status["token"]
        if not isinstance(token, str) or not token:
            raise ValueError("the TokenRequest's status has no token")
        return token, _parse_time(str(status["expirationTimestamp"]))

    def _event(
        self, attempt: int, *, expires_in: float = 0.0, refresh_in: float = 0.0, error: str = ""
    ) -> None:
        self._bus.point(
            ControllerTokenRequested(
                controller=self._controller,
                namespace=self.namespace,
                service_account=self.name,
                attempt=attempt,
                expires_in_s=round(expires_in, 3),
                refresh_in_s=round(refresh_in, 3),
                error=error,
            )
        )
