"""--controller-priority-queue: the built-in controllers' work queues hand out fresh changes
first (controller-runtime's priority queue; pycm.workqueue.priority_queue).

Off by default, as KCM's controllers have no priority queue (client-go's work queue is FIFO):
with it off the built-ins reconcile in KCM's order. Plugins built with
:class:`~pycm.controller.builder.ControllerBuilder` use a priority queue whatever this says
(controller-runtime 0.22's default; a plugin opts out with ``priority_queue=False``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pycm.app.config import Config, ControllersConfig
from pycm.app.options.flagset import BOOL, FlagSet

__all__ = ["PriorityQueueOptions"]

_D = ControllersConfig()


@dataclass
class PriorityQueueOptions:
    controller_priority_queue: bool = _D.priority_queue

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "controller_priority_queue",
            "controller-priority-queue",
            BOOL,
            "The built-in controllers (deployment, replicaset) use a priority queue: keys "
            "enqueued by an informer's initial list or a resync wait behind keys whose objects "
            "changed, so after a start or a failover fresh changes are reconciled first. "
            "Plugins built with the controller builder use one unless they opt out.",
        )

    def validate(self) -> list[str]:
        return []

    def apply_to(self, config: Config) -> None:
        # After the Controllers group, which builds config.controllers.
        config.controllers = replace(
            config.controllers, priority_queue=self.controller_priority_queue
        )
