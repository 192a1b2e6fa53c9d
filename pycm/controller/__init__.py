"""Shared controller machinery, as every KCM controller uses it.

- :mod:`~pycm.controller.worker` — the worker loop and the reconcile contract on one page.
- :mod:`~pycm.controller.expectations` — creations/deletions a controller waits to observe.
- :mod:`~pycm.controller.ref_manager` — ControllerRef adoption and release.
- :mod:`~pycm.controller.pod_control` — pods from a template, with the owner reference.
- :mod:`~pycm.controller.metrics` — controller-runtime's reconcile metrics.
"""

from pycm.controller.expectations import ControllerExpectations, UIDTrackingExpectations
from pycm.controller.metrics import ControllerMetrics
from pycm.controller.worker import Controller, Result, TerminalError, Trigger

__all__ = [
    "Controller",
    "ControllerExpectations",
    "ControllerMetrics",
    "Result",
    "TerminalError",
    "Trigger",
    "UIDTrackingExpectations",
]
