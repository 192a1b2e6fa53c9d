"""The controller registry: every controller pycm can run, by canonical name, with its aliases.

As KCM's controller descriptors: a name, aliases, whether ``*`` enables it, and an init function
that receives the controller context and returns the running controller (or None: "not
started"). Registration rejects a duplicate name or alias at once, so a misconfigured build
fails at import, not at run time.

``--controllers`` is resolved here with KCM's scan (``resolve``): for each controller, the first
item naming it decides — its name or alias → on, ``-name`` → off; if none names it, ``*``
anywhere in the list → on when enabled by default; otherwise off. Unknown names are errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ControllerDescriptor", "Registry", "RegistryError", "default_registry"]

InitFunc = Callable[[Any], Awaitable[Any]]
"""``async init(context) -> controller | None`` (None: the controller chose not to start)."""


class RegistryError(ValueError):
    """A duplicate registration, or an unknown name in --controllers."""


@dataclass(frozen=True, slots=True)
class ControllerDescriptor:
    name: str
    init: InitFunc
    aliases: tuple[str, ...] = ()
    enabled_by_default: bool = True
    # Informer resources the controller needs synced before its workers start (for docs/health).
    requires: tuple[str, ...] = field(default=())


class Registry:
    """Descriptors by canonical name. Invariant: every name and alias maps to one descriptor."""

    def __init__(self) -> None:
        self._by_name: dict[str, ControllerDescriptor] = {}
        self._canonical: dict[str, str] = {}  # name or alias -> canonical name

    def register(self, descriptor: ControllerDescriptor) -> ControllerDescriptor:
        for label in (descriptor.name, *descriptor.aliases):
            if not label or label.startswith("-") or label == "*":
                raise RegistryError(f"invalid controller name or alias {label!r}")
            if label in self._canonical:
                raise RegistryError(
                    f"controller name or alias {label!r} is already registered "
                    f"(by {self._canonical[label]!r})"
                )
        self._by_name[descriptor.name] = descriptor
        for label in (descriptor.name, *descriptor.aliases):
            self._canonical[label] = descriptor.name
        return descriptor

    def __contains__(self, name: object) -> bool:
        return name in self._canonical

    def __iter__(self) -> Any:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> ControllerDescriptor:
        return self._by_name[self._canonical[name]]

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def canonical(self, name: str) -> str | None:
        return self._canonical.get(name)

    def validate(self, items: Sequence[str]) -> list[str]:
        """Every error in a --controllers list (all of them, not the first)."""
        errors = []
        for item in items:
            name = item[1:] if item.startswith("-") else item
            if item == "*":
                continue
            if name not in self._canonical:
                known = ", ".join(self.names())
                errors.append(f'"{name}" is not in the list of known controllers ({known})')
        return errors

    def resolve(self, items: Iterable[str]) -> dict[str, bool]:
        """Canonical name → enabled, by KCM's first-match scan of the --controllers items."""
        scan = [i.strip() for i in items if i.strip()]
        errors = self.validate(scan)
        if errors:
            raise RegistryError("; ".join(errors))
        enabled: dict[str, bool] = {}
        for descriptor in self._by_name.values():
            labels = {descriptor.name, *descriptor.aliases}
            decision: bool | None = None
            for item in scan:
                if item in labels:
                    decision = True
                    break
                if item.startswith("-") and item[1:] in labels:
                    decision = False
                    break
            if decision is None:
                decision = "*" in scan and descriptor.enabled_by_default
            enabled[descriptor.name] = decision
        return enabled


_default = Registry()


def default_registry() -> Registry:
    """The registry the controllers of pycm.controllers register into."""
    return _default
