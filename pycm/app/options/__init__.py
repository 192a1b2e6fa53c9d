"""The ``pycm run`` options: one module per option group, as KCM's app/options.

Each group (``generic``, ``controllers``, ``leaderelection``, ``deployment``, ``replicaset``,
``secure_serving``, ``insecure_serving``, ``authentication``, ``authorization``, ``tracing``,
``misc``, ``logs``) is a small mutable dataclass with ``add_flags(flag_set)``,
``validate() -> list[str]`` (every error) and ``apply_to(config)``; its defaults come from the
matching frozen dataclass in :mod:`pycm.app.config`.
:class:`ControllerManagerOptions` holds them all. The flag machinery is pflag's
(:mod:`~pycm.app.options.flagset`), help is cobra's (:mod:`~pycm.app.options.help`), and the
``--config`` file is YAML with flag-named keys (:mod:`~pycm.app.options.configfile`).
"""

from pycm.app.options.controllers import KnownControllers, default_known_controllers
from pycm.app.options.flagset import Flag, FlagSet, NamedFlagSets, is_secret_flag
from pycm.app.options.help import render_help, render_usage
from pycm.app.options.options import SECTIONS, WITHHELD, ControllerManagerOptions

__all__ = [
    "SECTIONS",
    "WITHHELD",
    "ControllerManagerOptions",
    "Flag",
    "FlagSet",
    "KnownControllers",
    "NamedFlagSets",
    "default_known_controllers",
    "is_secret_flag",
    "render_help",
    "render_usage",
]
