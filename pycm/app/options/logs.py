"""Log options: verbosity (-v, klog's Level) and the log format."""

from __future__ import annotations

from dataclasses import dataclass

from pycm.app.config import Config, LogsConfig
from pycm.app.options.checks import one_of
from pycm.app.options.flagset import LEVEL, STRING, FlagSet

__all__ = ["LOG_FORMATS", "LogsOptions"]

_D = LogsConfig()
LOG_FORMATS = ("text", "json")


@dataclass
class LogsOptions:
    verbosity: int = _D.verbosity
    format: str = _D.format

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "verbosity",
            "v",
            LEVEL,
            "The log verbosity: 0 logs what an operator needs, higher numbers more detail.",
            shorthand="v",
        )
        fs.add(self, "format", "log-format", STRING, "The log format: text or json.")

    def validate(self) -> list[str]:
        errors = []
        if self.verbosity < 0:
            errors.append(f"-v {self.verbosity} must not be negative")
        bad_format = one_of("log-format", self.format, LOG_FORMATS)
        if bad_format:
            errors.append(bad_format)
        return errors

    def apply_to(self, config: Config) -> None:
        config.logs = LogsConfig(verbosity=self.verbosity, format=self.format)
