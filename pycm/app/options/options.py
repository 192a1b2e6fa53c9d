"""The manager's options: every group, its flag section, and the path to a Config.

The KCM shape (cmd/kube-controller-manager/app/options/options.go): one object holding each
option group; ``flag_sets`` are the groups' flags in their help sections (in order); ``parse``
reads a command line and a --config file into the groups; ``validate`` returns every error of
every group; ``config`` applies each group to a fresh :class:`~pycm.app.config.Config`.
"""

from __future__ import annotations

from typing import Protocol

from pycm.app.config import Config
from pycm.app.options.authentication import AuthenticationOptions
from pycm.app.options.authorization import AuthorizationOptions
from pycm.app.options.configfile import load_config_file
from pycm.app.options.controllers import (
    ControllersOptions,
    KnownControllers,
    default_known_controllers,
)
from pycm.app.options.debugging import DebuggingOptions
from pycm.app.options.deployment import DeploymentControllerOptions
from pycm.app.options.featuregates import FeatureGatesOptions
from pycm.app.options.flagset import (
    Flag,
    FlagSet,
    FlagValueError,
    NamedFlagSets,
    go_quote,
    parse,
)
from pycm.app.options.generic import GenericOptions
from pycm.app.options.insecure_serving import InsecureServingOptions
from pycm.app.options.leaderelection import LeaderElectionOptions
from pycm.app.options.logs import LogsOptions
from pycm.app.options.misc import MiscOptions
from pycm.app.options.priority_queue import PriorityQueueOptions
from pycm.app.options.refused import REFUSED, RefusedFlagsOptions
from pycm.app.options.replicaset import ReplicaSetControllerOptions
from pycm.app.options.secure_serving import SecureServingOptions
from pycm.app.options.sharding import ShardingOptions
from pycm.app.options.tracing import TracingOptions
from pycm.util.redact import WITHHELD

__all__ = ["SECTIONS", "WITHHELD", "ControllerManagerOptions"]

# The help sections, in the order `pycm run --help` prints them. ("Debugging" holds only hidden
# flags, so help never prints it: its set is made after these, when its group adds its flags.)
SECTIONS = (
    "Generic",
    "Controllers",
    "Leader election",
    "Sharding",
    "Deployment controller",
    "ReplicaSet controller",
    "Secure serving",
    "Insecure serving",
    "Authentication",
    "Authorization",
    "Tracing and events",
    "Logs",
    "Misc",
    "Global",
)


class ControllerManagerOptions:
    def __init__(self, known_controllers: KnownControllers | None = None) -> None:
        known = known_controllers if known_controllers is not None else default_known_controllers()
        self.generic = GenericOptions()
        self.feature_gates = FeatureGatesOptions()
        self.debugging = DebuggingOptions()
        self.controllers = ControllersOptions(known=known)
        self.priority_queue = PriorityQueueOptions()
        self.leader_election = LeaderElectionOptions()
        self.sharding = ShardingOptions()
        self.deployment_controller = DeploymentControllerOptions()
        self.replicaset_controller = ReplicaSetControllerOptions()
        self.secure_serving = SecureServingOptions()
        self.insecure_serving = InsecureServingOptions()
        self.authentication = AuthenticationOptions()
        self.authorization = AuthorizationOptions()
        self.tracing = TracingOptions()
        self.misc = MiscOptions()
        self.logs = LogsOptions()
        self.refused = RefusedFlagsOptions()
        self.warnings: list[str] = []  # deprecated flags used (pflag's lines), from parse
        self.flag_sets = NamedFlagSets()
        for title in SECTIONS:
            self.flag_sets.flag_set(title)
        for title, group in self._groups():
            group.add_flags(self.flag_sets.flag_set(title))

    def _groups(self) -> list[tuple[str, _Group]]:
        return [
            ("Generic", self.generic),
            ("Generic", self.feature_gates),  # (KCM adds the gates to its generic section)
            ("Debugging", self.debugging),
            ("Controllers", self.controllers),
            ("Controllers", self.priority_queue),  # (applied after the group above)
            ("Leader election", self.leader_election),
            ("Sharding", self.sharding),
            ("Deployment controller", self.deployment_controller),
            ("ReplicaSet controller", self.replicaset_controller),
            ("Secure serving", self.secure_serving),
            ("Insecure serving", self.insecure_serving),
            ("Authentication", self.authentication),
            ("Authorization", self.authorization),
            ("Tracing and events", self.tracing),
            ("Logs", self.logs),
            ("Misc", self.misc),
            ("Refused", self.refused),  # KCM's flags pycm refuses, hidden (help skips them)
        ]

    def parse(self, argv: list[str], *, command: str = "pycm run") -> list[str]:
        """Set the options from ``argv`` (and its --config file, underneath); every error.

        Values that do not convert keep their previous value; the errors say why.
        """
        parsed = parse(self.flag_sets, argv)
        self.warnings = list(parsed.warnings)
        errors = list(parsed.errors)
        by_name, _ = self.flag_sets.index()
        config_flag = by_name["config"]
        config_path = next(
            (value for flag, value in reversed(parsed.assignments) if flag is config_flag), ""
        )
        if config_path:
            loaded = load_config_file(config_path, by_name)
            errors.extend(loaded.errors)
            errors.extend(_apply(loaded.assignments, prefix=f"--config {go_quote(config_path)}: "))
        errors.extend(_apply(parsed.assignments))
        if parsed.positionals:
            given = " ".join(go_quote(p) for p in parsed.positionals)
            errors.append(f"{go_quote(command)} does not take any arguments, got [{given}]")
        return errors

    def validate(self) -> list[str]:
        """Every error of every group (none when the options can be applied)."""
        return [error for _, group in self._groups() for error in group.validate()]

    def config(self, *, exclude: frozenset[str] = frozenset()) -> Config:
        """A Config with every group applied and ``changed`` filled in; validate first."""
        config = Config()
        for _, group in self._groups():
            group.apply_to(config)
        exclude = exclude | REFUSED.keys()  # (refused: never part of a configuration)
        config.changed = {
            flag.name: flag.shown(flag.value_text())
            for flag in self.flag_sets
            if flag.name not in exclude and flag.value_text() != flag.default
        }
        config.flags = {
            flag.name: flag.shown(flag.value_text())
            for flag in self.flag_sets
            if flag.name not in exclude
        }
        return config


class _Group(Protocol):
    """What every option group has: KCM's AddFlags, Validate and ApplyTo."""

    def add_flags(self, fs: FlagSet) -> None: ...

    def validate(self) -> list[str]: ...

    def apply_to(self, config: Config) -> None: ...


def _apply(assignments: list[tuple[Flag, str]], *, prefix: str = "") -> list[str]:
    errors = []
    seen: set[str] = set()  # a strings flag given again in the same source appends
    for flag, text in assignments:
        try:
            flag.set(text, append=flag.name in seen)
        except FlagValueError as err:
            errors.append(f"{prefix}{err}")
        else:
            seen.add(flag.name)
    return errors
