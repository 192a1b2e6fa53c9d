"""What the REST handlers share: the emulator's :class:`APIContext` and the request hooks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response

from pycm.sim.auth import Authorizer, TokenAuthenticator
from pycm.sim.openapi import CustomSchemas, OpenAPI
from pycm.sim.store import Store

__all__ = ["APIContext", "BeforeRequest"]

# A hook may answer a request itself (a fault) by returning a Response, or pass with None.
BeforeRequest = Callable[[Request], Awaitable[Response | None]]


@dataclass
class APIContext:
    """What the handlers need; owned by the Emulator and stored on ``app.state.api``."""

    store: Store
    authenticator: TokenAuthenticator
    authorizer: Authorizer
    bookmark_interval: float = 10.0
    watch_list: bool = True  # kube's WatchList gate: watches may stream initial events
    # kube's ShardedListAndWatch gate (alpha, off): lists and watches honour shardSelector.
    sharded_list_and_watch: bool = False
    server_address: str = "127.0.0.1:0"
    # Run in order before anything else; see BeforeRequest.
    before_request: list[BeforeRequest] = field(default_factory=list)
    # Set once the server is stopping: new requests still work, watches end at once.
    stopping: bool = False
    # The custom resources' served schemas, for the OpenAPI documents (None: the CRD registry's).
    custom_schemas: CustomSchemas | None = None
    openapi: OpenAPI | None = None  # made on first use (it caches the encoded documents)
