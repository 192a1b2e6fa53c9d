"""Misc options: where the cluster is (--kubeconfig, --master) and the --config file."""

from __future__ import annotations

from dataclasses import dataclass

from pycm.app.config import Config, MiscConfig
from pycm.app.options.checks import kubeconfig_file
from pycm.app.options.flagset import STRING, FlagSet

__all__ = ["MiscOptions"]

_D = MiscConfig()


@dataclass
class MiscOptions:
    kubeconfig: str = _D.kubeconfig
    master: str = _D.master
    config_file: str = _D.config_file

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "kubeconfig",
            "kubeconfig",
            STRING,
            "The kubeconfig with the API server's address and credentials; empty uses the "
            "in-cluster configuration.",
        )
        fs.add(
            self,
            "master",
            "master",
            STRING,
            "The API server's address; overrides the one in --kubeconfig.",
        )
        fs.add(
            self,
            "config_file",
            "config",
            STRING,
            "A YAML file of settings: flat keys named as the flags without dashes in front "
            "(leader-elect-lease-duration: 4s). Flags on the command line override it; an "
            "unknown key is an error.",
        )

    def validate(self) -> list[str]:
        # --config is read (and its problems reported) before validation, by the loader.
        error = kubeconfig_file("kubeconfig", self.kubeconfig)
        return [error] if error else []

    def apply_to(self, config: Config) -> None:
        config.misc = MiscConfig(
            kubeconfig=self.kubeconfig, master=self.master, config_file=self.config_file
        )
