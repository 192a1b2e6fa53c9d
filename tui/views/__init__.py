"""The views of `pycm top`, one tab each. Each is a :class:`~tui.views.base.View`: the app calls
:meth:`~tui.views.base.View.show` with the reducer snapshot on its refresh tick (method calls
down), and views post messages up (a drill-in request, a selection)."""

from tui.views.base import View
from tui.views.controllers import ControllersView
from tui.views.events import EventsView, key_term
from tui.views.informers import InformersView
from tui.views.leader import LeaderView
from tui.views.overview import OverviewView
from tui.views.startup import StartupView

__all__ = [
    "ControllersView",
    "EventsView",
    "InformersView",
    "LeaderView",
    "OverviewView",
    "StartupView",
    "View",
    "key_term",
]
