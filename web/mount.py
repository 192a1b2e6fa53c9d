"""The dashboard mounted in ``pycm run``: the manager's own events, on its secure port.

:func:`live_dashboard` builds what the manager mounts at ``/dashboard``: a "live" hub with one
source (this manager, named by its identity) whose state is the manager's own reducer (read
through ``snapshot``: every event is folded once per process), fed by one bus subscription
(:class:`web.busfeed.BusFeed`), and the app from :func:`web.app.build_dashboard` with a door
that checks logins the way the manager checks ``/debug/pycm/*``: the token by the manager's
TokenReview, the viewer by a SubjectAccessReview ``get`` on ``/debug/pycm/events``.

``web`` cannot import the manager's server, so the manager lends plain callables:
``review_token(token) -> (name, uid, groups) | None`` and ``authorize(name, uid, groups) ->
(allowed, reason)``. Any exception from them means no answer could be had (503 at the door).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.types import ASGIApp

from pycm.trace.bus import Bus
from web.app import build_dashboard
from web.auth import Access, CheckFailed, DashboardAuth
from web.busfeed import BusFeed
from web.hub import DashboardConfig, Hub
from web.live import live_routes
from web.sessions import Viewer

__all__ = ["LiveDashboard", "live_dashboard"]

Identity = tuple[str, str, tuple[str, ...]]  # user name, uid, groups
TokenReview = Callable[[str], Awaitable[Identity | None]]
AccessReview = Callable[[str, str, tuple[str, ...]], Awaitable[tuple[bool, str]]]


class LiveDashboard:
    """What the manager mounts: ``app`` at ``/dashboard``; ``run()`` as one of its tasks
    (the bus feed and the hub's 4 Hz flush); ``close()`` before its server stops, which ends
    every viewer's stream so the server's graceful stop is not held open by them."""

    def __init__(self, hub: Hub, feed: BusFeed, app: ASGIApp, auth: DashboardAuth) -> None:
        self.hub = hub
        self.feed = feed
        self.app = app
        self.auth = auth

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self.feed.run(), name="dashboard bus feed")
            group.create_task(self.hub.run(), name="dashboard hub")

    def close(self) -> None:
        self.hub.broadcast.close_all()


def live_dashboard(
    *,
    bus: Bus,
    identity: str,
    snapshot: Callable[[], dict[str, Any]] | None,
    review_token: TokenReview,
    authorize: AccessReview,
    renew_deadline_s: float = 10.0,
    lease_duration_s: float = 15.0,
    jaeger_url: str | None = None,
) -> LiveDashboard:
    config = DashboardConfig(
        jaeger_url=jaeger_url, renew_deadline_s=renew_deadline_s, lease_duration_s=lease_duration_s
    )
    hub = Hub("live", config)
    hub.add_source(identity, snapshot=snapshot)
    feed = BusFeed(bus, hub, identity)

    async def check_token(token: str) -> Viewer | None:
        try:
            who = await review_token(token)
        except Exception as exc:  # the manager's reviewer could not answer
            raise CheckFailed(str(exc) or type(exc).__name__) from None
        if who is None:
            return None
        name, uid, groups = who
        return Viewer(name, uid, tuple(groups))

    async def check_access(viewer: Viewer) -> Access:
        try:
            allowed, reason = await authorize(viewer.name, viewer.uid, viewer.groups)
        except Exception as exc:
            raise CheckFailed(str(exc) or type(exc).__name__) from None
        return Access(allowed, reason)

    auth = DashboardAuth(check_token, authorize=check_access)
    app = build_dashboard(live_routes(hub), auth, jaeger_url=jaeger_url)
    return LiveDashboard(hub, feed, app, auth)
