"""Which controllers run and how they start: --controllers and --controller-start-interval.

The known controllers come from the controller registry (:mod:`pycm.app.registry`), passed in;
until the controllers issue fills the default registry, :func:`default_known_controllers`
stands in with the two pycm will have: ``deployment`` (alias ``deployment-controller``) and
``replicaset`` (alias ``replicaset-controller``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pycm.app.config import Config, ControllersConfig
from pycm.app.options.flagset import DURATION, STRINGS, FlagSet
from pycm.app.registry import ControllerDescriptor, Registry, default_registry

__all__ = ["ControllersOptions", "KnownControllers", "default_known_controllers"]

_D = ControllersConfig()


class KnownControllers(Protocol):
    """The subset of :class:`~pycm.app.registry.Registry` that option validation uses."""

    def names(self) -> list[str]: ...

    def validate(self, items: Sequence[str]) -> list[str]: ...

    def resolve(self, items: Sequence[str]) -> dict[str, bool]: ...


async def _not_landed(_: Any) -> None:
    raise RuntimeError("this controller has not landed yet: only its name is known")


def _stand_in() -> Registry:
    registry = Registry()
    registry.register(
        ControllerDescriptor("deployment", _not_landed, aliases=("deployment-controller",))
    )
    registry.register(
        ControllerDescriptor("replicaset", _not_landed, aliases=("replicaset-controller",))
    )
    return registry


def default_known_controllers() -> KnownControllers:
    """The default registry once controllers are registered in it, else the stand-in names
    (which validate --controllers but cannot start anything)."""
    registry = default_registry()
    return registry if len(registry) else _stand_in()


@dataclass
class ControllersOptions:
    known: KnownControllers = field(default_factory=default_known_controllers)
    controllers: list[str] = field(default_factory=lambda: list(_D.controllers))
    controller_start_interval: float = _D.controller_start_interval

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "controllers",
            "controllers",
            STRINGS,
            "The controllers to run: '*' runs every controller that is on by default, 'foo' "
            "runs the controller named foo, '-foo' does not run it; the first item naming a "
            f"controller decides.\nAll controllers: {', '.join(self.known.names())}",
        )
        fs.add(
            self,
            "controller_start_interval",
            "controller-start-interval",
            DURATION,
            "Each controller waits a random time up to twice this before it starts.",
        )

    def validate(self) -> list[str]:
        return self.known.validate(self.controllers)

    def apply_to(self, config: Config) -> None:
        enabled = self.known.resolve(self.controllers)
        config.controllers = ControllersConfig(
            controllers=tuple(self.controllers),
            controller_start_interval=self.controller_start_interval,
            enabled=tuple(sorted(name for name, on in enabled.items() if on)),
        )
