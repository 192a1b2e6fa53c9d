"""The controller registry: every controller pycm can run, by canonical name, with its aliases.

As KCM's controller descriptors (:class:`~pycm.controller.descriptor.ControllerDescriptor`):
a name, aliases, whether ``*`` enables it, and an init function. Registration rejects a
duplicate name or alias at once, naming where both came from (``built-in``, ``registered in
code``, or the plugin's distribution).

The registry ``pycm run`` uses is built explicitly, before its flags are parsed
(:func:`pycm.app.controllers.build_registry`): the built-ins, then the descriptors registered
in code on :func:`default_registry`, then the plugins found under the entry-point group
``pycm.controllers`` (:func:`load_plugins`). Nothing registers itself by being imported.

Plugins fail alone: a plugin that cannot be loaded or registered (an import error, not a
descriptor, a name that collides) is kept in :attr:`Registry.broken` with its message and
everything else loads. It is an error only when ``--controllers`` names it (by its entry-point
name, the only name known of a plugin that did not load); otherwise the command says one
warning naming it (:meth:`Registry.warnings`) and runs the rest, and ``--help`` lists it under
"Plugins that failed to load".

``--controllers`` is resolved here with KCM's scan (``resolve``): for each controller, the first
item naming it decides — its name or alias → on, ``-name`` → off; if none names it, ``*``
anywhere in the list → on when enabled by default; otherwise off. Unknown names are errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata

from pycm.controller.descriptor import ENTRY_POINT_GROUP, ControllerDescriptor, InitFunc

__all__ = [
    "BUILT_IN",
    "IN_CODE",
    "BrokenPlugin",
    "ControllerDescriptor",
    "InitFunc",
    "PluginError",
    "Registry",
    "RegistryError",
    "default_registry",
    "load_plugins",
]

BUILT_IN = "built-in"
IN_CODE = "registered in code"


class RegistryError(ValueError):
    """A duplicate registration, or an unknown name in --controllers."""


class PluginError(RegistryError):
    """A plugin that cannot be loaded or registered; the message names its distribution."""


@dataclass(frozen=True, slots=True)
class BrokenPlugin:
    """A plugin entry point that could not be loaded or registered."""

    name: str  # the entry point's name (its controllers' names are unknown: it did not load)
    origin: str  # "distribution <name> <version>"
    message: str  # the whole error, naming the entry point and the distribution


class Registry:
    """Descriptors by canonical name. Invariant: every name and alias maps to one descriptor,
    and every descriptor has a source (where it came from, for messages and help). Plugins
    that failed to load are in ``broken``, none of their names registered."""

    def __init__(self) -> None:
        self._by_name: dict[str, ControllerDescriptor] = {}
        self._canonical: dict[str, str] = {}  # name or alias -> canonical name
        self._source: dict[str, str] = {}  # canonical name -> built-in / in code / distribution
        self.broken: list[BrokenPlugin] = []

    def register(
        self, descriptor: ControllerDescriptor, *, source: str = IN_CODE
    ) -> ControllerDescriptor:
        for label in (descriptor.name, *descriptor.aliases):
            if not label or label.startswith("-") or label == "*" or "," in label:
                raise RegistryError(f"invalid controller name or alias {label!r}")
            if label in self._canonical:
                owner = self._canonical[label]
                raise RegistryError(
                    f"controller name or alias {label!r} is already registered "
                    f"(by {owner!r}, {self._source[owner]})"
                )
        self._by_name[descriptor.name] = descriptor
        self._source[descriptor.name] = source
        for label in (descriptor.name, *descriptor.aliases):
            self._canonical[label] = descriptor.name
        return descriptor

    def __contains__(self, name: object) -> bool:
        return name in self._canonical

    def __iter__(self) -> Iterator[ControllerDescriptor]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> ControllerDescriptor:
        return self._by_name[self._canonical[name]]

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def source(self, name: str) -> str:
        """Where the controller ``name`` came from: built-in, in code, or a distribution."""
        return self._source[self._canonical[name]]

    def canonical(self, name: str) -> str | None:
        return self._canonical.get(name)

    def describe(self) -> str:
        """The --controllers help lines: every controller, then the off-by-default ones and
        the plugins with their distributions (KCM lists the disabled-by-default ones too)."""
        lines = [f"All controllers: {', '.join(self.names())}"]
        off = [d.name for d in self if not d.enabled_by_default]
        if off:
            lines.append(f"Disabled-by-default controllers: {', '.join(sorted(off))}")
        plugins = [
            f"{name} from {source}"
            for name, source in sorted(self._source.items())
            if source not in (BUILT_IN, IN_CODE)
        ]
        if plugins:
            lines.append(f"Plugin controllers: {', '.join(plugins)}")
        if self.broken:
            failed = ", ".join(f"{b.name} from {b.origin}" for b in self.broken)
            lines.append(f"Plugins that failed to load: {failed}")
        return "\n".join(lines)

    def warnings(self, items: Sequence[str]) -> list[str]:
        """One line per broken plugin that ``items`` (--controllers) does not name: it is
        left out, and the rest runs (one that is named is an error of :meth:`validate`)."""
        named = {item.strip() for item in items}
        return [
            f"{b.message} (its controllers are not available; the others run)"
            for b in self.broken
            if b.name not in named
        ]

    def validate(self, items: Sequence[str]) -> list[str]:
        """Every error in a --controllers list (all of them, not the first)."""
        errors: list[str] = []
        for item in items:
            name = item[1:] if item.startswith("-") else item
            if item == "*":
                continue
            if name in self._canonical:
                continue
            broken = [b for b in self.broken if b.name == name]
            if broken and not item.startswith("-"):
                errors.extend(b.message for b in broken)  # asked for: its failure is an error
            elif not broken:
                known = ", ".join(self.names())
                failed = ", ".join(f"{b.name} from {b.origin}" for b in self.broken)
                failed = f"; plugins that failed to load: {failed}" if failed else ""
                errors.append(f'"{name}" is not in the list of known controllers ({known}){failed}')
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


def _distribution(entry_point: metadata.EntryPoint) -> str:
    dist = entry_point.dist
    if dist is None:
        return "an unknown distribution"
    return f"distribution {dist.name} {dist.version}"


def load_plugins(
    registry: Registry,
    entry_points: Iterable[metadata.EntryPoint] | None = None,
    *,
    strict: bool = False,
) -> Registry:
    """Register the descriptor each entry point of group ``pycm.controllers`` names.

    A plugin that fails to import, names something that is not a ControllerDescriptor, or
    collides with a registered name or alias is kept in ``registry.broken`` with a message
    naming its distribution and entry point, and the others load; with ``strict`` it raises
    :class:`PluginError` instead.
    """
    found = metadata.entry_points(group=ENTRY_POINT_GROUP) if entry_points is None else entry_points
    for entry_point in sorted(found, key=lambda ep: ep.name):
        try:
            _load_one(registry, entry_point)
        except PluginError as exc:
            if strict:
                raise
            registry.broken.append(
                BrokenPlugin(entry_point.name, _distribution(entry_point), str(exc))
            )
    return registry


def _load_one(registry: Registry, entry_point: metadata.EntryPoint) -> None:
    """Load and register one entry point's descriptor, or raise :class:`PluginError`."""
    origin = _distribution(entry_point)
    where = f"plugin controller {entry_point.name!r} ({entry_point.value}) from {origin}"
    if entry_point.pattern.match(entry_point.value) is None:
        raise PluginError(f"{where}: the entry point is not 'module:attribute'")
    try:
        descriptor = entry_point.load()
    # Any import-time failure of third-party code, sys.exit() included: that would end
    # `pycm run` with the plugin's status and no word of why.
    except (Exception, SystemExit) as exc:
        raise PluginError(f"{where} failed to load: {type(exc).__name__}: {exc}") from None
    if not isinstance(descriptor, ControllerDescriptor):
        raise PluginError(
            f"{where} is a {type(descriptor).__name__}, not a pycm.controller.ControllerDescriptor"
        )
    try:
        registry.register(descriptor, source=origin)
    except RegistryError as exc:
        raise PluginError(f"{where}: {exc}") from None


_default = Registry()


def default_registry() -> Registry:
    """Controllers registered in code (by a program that embeds pycm before it calls
    ``pycm.app.command.run``); the registry ``pycm run`` builds includes them beside the
    built-ins and the plugins."""
    return _default
