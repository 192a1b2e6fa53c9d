"""The admin endpoint ``/sim/v1/faults``: list, add and clear faults over HTTP, with the
emulator's admin token only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import orjson
from starlette.requests import Request
from starlette.responses import Response

from pycm.sim import errors
from pycm.sim.auth import TokenAuthenticator, bearer_token
from pycm.sim.faults.fault import Fault
from pycm.sim.handlers import error_response
from pycm.util.clock import Clock

__all__ = ["FAULTS_PATH", "FaultsEndpoint"]

FAULTS_PATH = "/sim/v1/faults"


class FaultSet(Protocol):
    """The subset of :class:`~pycm.sim.faults.active.Faults` the endpoint serves."""

    authenticator: TokenAuthenticator
    clock: Clock

    @property
    def active(self) -> Sequence[Fault]: ...

    def get(self, fault_id: str) -> Fault | None: ...

    def add(self, spec: Mapping[str, Any] | None = None, /, **fields: Any) -> Fault: ...

    def clear(self, fault_id: str | None = None) -> int: ...


class FaultsEndpoint:
    """``GET`` lists the active faults, ``POST`` adds one from a JSON body, ``DELETE`` clears
    all, ``GET`` / ``DELETE`` of ``/sim/v1/faults/<id>`` one; errors are v1 Status bodies."""

    def __init__(self, faults: FaultSet) -> None:
        self._faults = faults

    async def serve(self, request: Request, path: str) -> Response:
        try:
            return await self._serve(request, path.rstrip("/"))
        except errors.APIError as err:
            return error_response(err)

    async def _serve(self, request: Request, path: str) -> Response:
        faults = self._faults
        token = bearer_token(request.headers.get("authorization", ""))
        user = faults.authenticator.authenticate(token) if token else None
        if user is None or token is None:
            raise errors.unauthorized()
        # The admin token only, as docs/sim.md has always said: faults are the operator's
        # controls over the emulator itself (they fail and partition everyone's requests), not
        # part of the Kubernetes API a cluster-admin holds. Tests and the demo give the
        # managers under test system:masters tokens; those must not reach the fault API.
        if not faults.authenticator.is_admin_token(token):
            raise errors.forbidden_path(user.name, request.method.lower(), path)
        now = faults.clock.monotonic()
        if path == FAULTS_PATH:
            if request.method == "GET":
                items = [f.to_json(now) for f in faults.active]
                return _json({"kind": "FaultList", "apiVersion": "sim/v1", "items": items})
            if request.method == "POST":
                try:
                    body = orjson.loads(await request.body())
                except orjson.JSONDecodeError as err:
                    raise errors.bad_request(f"the body is not JSON: {err}") from None
                if not isinstance(body, dict):
                    raise errors.bad_request("the body must be a JSON object")
                return _json(faults.add(body).to_json(now), 201)
            if request.method == "DELETE":
                return _json({"kind": "Status", "apiVersion": "v1", "cleared": faults.clear()})
            raise errors.method_not_allowed(request.method, path)
        prefix = FAULTS_PATH + "/"
        if path.startswith(prefix) and "/" not in path[len(prefix) :]:
            fault_id = path[len(prefix) :]
            fault = faults.get(fault_id)
            if fault is None:
                raise errors.APIError(404, "NotFound", f'fault "{fault_id}" not found')
            if request.method == "GET":
                return _json(fault.to_json(now))
            if request.method == "DELETE":
                faults.clear(fault_id)
                return _json({"kind": "Status", "apiVersion": "v1", "cleared": 1})
            raise errors.method_not_allowed(request.method, path)
        raise errors.not_found("", "")


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status, media_type="application/json")
