"""Deployment controller options (KCM's DeploymentControllerOptions)."""

from __future__ import annotations

from dataclasses import dataclass

from pycm.app.config import Config, DeploymentControllerConfig
from pycm.app.options.flagset import INT32, FlagSet

__all__ = ["DeploymentControllerOptions"]

_D = DeploymentControllerConfig()


@dataclass
class DeploymentControllerOptions:
    concurrent_deployment_syncs: int = _D.concurrent_deployment_syncs

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "concurrent_deployment_syncs",
            "concurrent-deployment-syncs",
            INT32,
            "Deployments synced at once (workers); more is more responsive and more load.",
        )

    def validate(self) -> list[str]:
        if self.concurrent_deployment_syncs < 1:
            return [
                "--concurrent-deployment-syncs must be at least 1, got "
                f"{self.concurrent_deployment_syncs}"
            ]
        return []

    def apply_to(self, config: Config) -> None:
        config.deployment_controller = DeploymentControllerConfig(
            concurrent_deployment_syncs=self.concurrent_deployment_syncs
        )
