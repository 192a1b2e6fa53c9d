"""The dashboard mounted in ``pycm run``: the manager's own events, on its secure port.

:func:`live_dashboard` builds what the manager mounts at ``/dashboard``: a "live" hub with one
source (this manager, named by its identity) whose state is the manager's own reducer (read
through ``snapshot``: every event is folded once per process), fed by one bus subscription
(:class:`web.busfeed.BusFeed`), and the app from :func:`web.app.build_dashboard` behind the door
the manager lends (``pycm.server.DashboardDoor``, through :func:`web.auth.manager_auth`): logins
and viewers are checked as ``/debug/pycm/*`` requests are — TokenReview, then a
SubjectAccessReview ``get`` on ``/debug/pycm/events``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from starlette.types import ASGIApp

from pycm.trace.bus import Bus
from pycm.trace.state import State
from web.app import build_dashboard
from web.auth import DashboardAuth, ManagerDoor, manager_auth
from web.busfeed import BusFeed
from web.hub import DashboardConfig, Hub
from web.live import live_routes
from web.sessions import Viewer

__all__ = ["LiveDashboard", "live_dashboard"]


class LiveDashboard:
    """What the manager mounts: ``app`` at ``/dashboard``; ``run()`` as one of its tasks
    (the bus feed and the hub's 4 Hz flush); ``close()`` before its server stops, which ends
    every viewer's stream so the server's graceful stop is not held open by them;
    ``session_user`` for the chain (a dashboard session is a credential for /debug/pycm/*)."""

    def __init__(self, hub: Hub, feed: BusFeed, app: ASGIApp, auth: DashboardAuth) -> None:
        self.hub = hub
        self.feed = feed
        self.app = app
        self.auth = auth

    def session_user(self, session_id: str) -> Viewer | None:
        return self.auth.sessions.lookup(session_id)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self.feed.run(), name="dashboard bus feed")
            group.create_task(self.hub.run(), name="dashboard hub")

    def close(self) -> None:
        self.hub.broadcast.close_all()


def _state_behind(snapshot: Callable[[], Mapping[str, Any]] | None) -> State | None:
    """The reducer state whose ``snapshot`` method the manager lends (``pycm run`` passes
    ``State.snapshot``, bound): the object panel reads its histories and span index directly,
    as ``GET /debug/pycm/objects`` does. Any other callable lends no histories."""
    owner = getattr(snapshot, "__self__", None)
    return owner if isinstance(owner, State) else None


def live_dashboard(
    *,
    bus: Bus,
    identity: str,
    snapshot: Callable[[], Mapping[str, Any]] | None,
    door: ManagerDoor,
    jaeger_url: str | None = None,
) -> LiveDashboard:
    config = DashboardConfig(jaeger_url=jaeger_url)
    hub = Hub("live", config)
    state = _state_behind(snapshot)
    hub.add_source(identity, snapshot=snapshot, objects=lambda: state)
    auth = manager_auth(door)
    app = build_dashboard(live_routes(hub), auth, jaeger_url=jaeger_url)
    return LiveDashboard(hub, BusFeed(bus, hub, identity), app, auth)
