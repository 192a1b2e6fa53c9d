"""Fault injection: bounded, clearable misbehaviour of the emulator, for chaos and tests.

Faults are added through the Python API (``emu.faults.add(kind="latency", ...)``,
``emu.faults.clear()``) or the admin endpoint ``/sim/v1/faults`` (the emulator's admin token
only: 401 without a valid token, 403 for any other, even one of a ``system:masters`` user;
``GET`` lists the active faults, ``POST`` adds one from a JSON body, ``DELETE`` clears all,
``DELETE /sim/v1/faults/<id>`` one). Kinds:

- ``latency``: ``seconds`` added before matching requests are served.
- ``error``: matching requests fail, with probability ``rate`` (default 1), with ``status`` 500
  (InternalError), 429 (TooManyRequests, ``Retry-After: retryAfter``) or 409 (Conflict) — as
  proper v1 Status bodies.
- ``partition``: every request of ``user`` hangs until the fault ends (then it is served) or
  ``hold`` seconds pass (then 504 Timeout).
- ``pause-kubelet``: the simulated kubelet stops (resumes when the fault ends or is cleared).
- ``watch-lag``: every watch opened while it is active (matching ``resource``, ``namespace``,
  ``user``) delivers its live events ``seconds`` late, for its whole life
  (:mod:`pycm.sim.watchlag`): a stale informer cache, on demand.
- one-shot actions, done when added and never active: ``drop-watches`` (every open watch ends
  now), ``compact`` (the watch history is forgotten: a watch from an older resourceVersion gets
  410 Expired), ``resume-kubelet``.

Matching (latency, error): optional ``verb`` (kube's: get, list, watch, create, update, patch,
delete, deletecollection), ``resource`` (plural, or ``plural/subresource``), ``namespace`` and
``user``; an absent field matches anything. Every lasting fault needs a bound — ``count``
(requests affected) and/or ``duration`` (seconds from now) — or it is refused (422); the
first bound reached ends it. Each addition, end and action is logged on ``pycm.sim``, one line
each: ``pycm sim: fault f3 added: latency 2.0s on update leases for user x (count 5)``.

The request hook runs before authentication (see ``pycm.sim.handlers``) and costs nothing but
a path check while no fault is active.

Modules: :mod:`~pycm.sim.faults.fault` (what every kind shares), :mod:`~pycm.sim.faults.kinds`
(one class per kind, and ``KINDS``: adding a kind is a class there and a line in ``KINDS``),
:mod:`~pycm.sim.faults.active` (the fault set, its lifetimes and the request hook),
:mod:`~pycm.sim.faults.endpoint` (the admin endpoint).
"""

from pycm.sim.faults.active import Faults
from pycm.sim.faults.endpoint import FAULTS_PATH
from pycm.sim.faults.fault import Fault

__all__ = ["FAULTS_PATH", "Fault", "Faults"]
