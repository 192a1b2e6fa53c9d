"""ReplicaSet controller options (KCM's ReplicaSetControllerOptions)."""

from __future__ import annotations

from dataclasses import dataclass

from pycm.app.config import Config, ReplicaSetControllerConfig
from pycm.app.options.flagset import INT32, FlagSet

__all__ = ["ReplicaSetControllerOptions"]

_D = ReplicaSetControllerConfig()


@dataclass
class ReplicaSetControllerOptions:
    concurrent_rs_syncs: int = _D.concurrent_rs_syncs

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "concurrent_rs_syncs",
            "concurrent-replicaset-syncs",
            INT32,
            "ReplicaSets synced at once (workers); more is more responsive and more load.",
        )

    def validate(self) -> list[str]:
        if self.concurrent_rs_syncs < 1:
            return [
                f"--concurrent-replicaset-syncs must be at least 1, got {self.concurrent_rs_syncs}"
            ]
        return []

    def apply_to(self, config: Config) -> None:
        config.replicaset_controller = ReplicaSetControllerConfig(
            concurrent_rs_syncs=self.concurrent_rs_syncs
        )
