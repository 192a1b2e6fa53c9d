"""Insecure serving options: plain HTTP health and metrics, off unless --port is set.

KCM dropped these flags; pycm keeps them for local runs and the demo (no TLS to set up).
"""

from __future__ import annotations

from dataclasses import dataclass

from pycm.app.config import Config, InsecureServingConfig
from pycm.app.options.checks import port_in_range
from pycm.app.options.flagset import INT, IP, FlagSet

__all__ = ["InsecureServingOptions"]

_D = InsecureServingConfig()


@dataclass
class InsecureServingOptions:
    address: str = _D.address
    port: int = _D.port

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "address",
            "address",
            IP,
            "The address to listen on for --port.",
        )
        fs.add(
            self,
            "port",
            "port",
            INT,
            "A plain HTTP port for health checks and metrics, without authentication; 0 "
            "(the default) turns it off.",
        )

    def validate(self) -> list[str]:
        error = port_in_range("port", self.port)
        return [error] if error else []

    def apply_to(self, config: Config) -> None:
        config.insecure_serving = InsecureServingConfig(address=self.address, port=self.port)
