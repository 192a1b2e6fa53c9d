"""Which controllers run and how they start: --controllers and --controller-start-interval;
--stuck-worker-threshold (when a worker holding one key is marked stuck); --wait-for-resources
(a controller whose kind is not served waits for it rather than failing the start-up).

The known controllers come from the controller registry (:mod:`pycm.app.registry`), passed in:
``pycm run`` builds it (built-ins, controllers registered in code, plugins) before it parses
flags. Without one, :func:`default_known_controllers` builds the same registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pycm.app.config import Config, ControllersConfig
from pycm.app.options.flagset import BOOL, DURATION, STRINGS, FlagSet
from pycm.util.durations import format_duration

__all__ = ["ControllersOptions", "KnownControllers", "default_known_controllers"]

_D = ControllersConfig()


class KnownControllers(Protocol):
    """The subset of :class:`~pycm.app.registry.Registry` that option validation uses."""

    def names(self) -> list[str]: ...

    def describe(self) -> str: ...

    def validate(self, items: Sequence[str]) -> list[str]: ...

    def resolve(self, items: Sequence[str]) -> dict[str, bool]: ...

    def warnings(self, items: Sequence[str]) -> list[str]: ...


def default_known_controllers() -> KnownControllers:
    """The registry ``pycm run`` uses (built-ins, registered in code, plugins), built now."""
    from pycm.app.controllers import build_registry  # the controllers import on demand only

    return build_registry()


@dataclass
class ControllersOptions:
    known: KnownControllers = field(default_factory=default_known_controllers)
    controllers: list[str] = field(default_factory=lambda: list(_D.controllers))
    controller_start_interval: float = _D.controller_start_interval
    stuck_worker_threshold: float = _D.stuck_worker_threshold
    wait_for_resources: bool = _D.wait_for_resources

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "controllers",
            "controllers",
            STRINGS,
            "The controllers to run: '*' runs every controller that is on by default, 'foo' "
            "runs the controller named foo, '-foo' does not run it; the first item naming a "
            f"controller decides.\n{self.known.describe()}",
        )
        fs.add(
            self,
            "controller_start_interval",
            "controller-start-interval",
            DURATION,
            "Each controller waits a random time up to twice this before it starts.",
        )
        fs.add(
            self,
            "stuck_worker_threshold",
            "stuck-worker-threshold",
            DURATION,
            "A worker that has processed one key for longer than this is marked stuck: a "
            "queue.stuck event and a warning name the controller, the key and the worker. "
            "0 turns the mark off.",
        )

        fs.add(
            self,
            "wait_for_resources",
            "wait-for-resources",
            BOOL,
            "A controller whose resource is not served (a custom resource whose CRD is not "
            "installed yet) waits for it, with /readyz naming what it waits for, instead of "
            "stopping the manager at start-up with an error naming the controller and the kind.",
        )

    def validate(self) -> list[str]:
        errors = list(self.known.validate(self.controllers))
        if self.stuck_worker_threshold < 0:
            errors.append(
                f"--stuck-worker-threshold {format_duration(self.stuck_worker_threshold)} "
                "must not be negative"
            )
        return errors

    def apply_to(self, config: Config) -> None:
        enabled = self.known.resolve(self.controllers)
        config.controllers = ControllersConfig(
            controllers=tuple(self.controllers),
            controller_start_interval=self.controller_start_interval,
            stuck_worker_threshold=self.stuck_worker_threshold,
            wait_for_resources=self.wait_for_resources,
            enabled=tuple(sorted(name for name, on in enabled.items() if on)),
        )
