"""Log options, KCM's "Logs flags": -v (klog's Level), --vmodule, --logging-format,
--log-flush-frequency.

``--log-format`` is pycm's old name of ``--logging-format``: kept for one release as a
deprecated alias (hidden from help, as pflag's MarkDeprecated hides it; using it prints
"Flag --log-format has been deprecated, use --logging-format instead"); given together, the
new name wins.

``--vmodule pattern=N,...`` (klog's): the verbosity of the modules whose name matches
``pattern`` (a glob on the module's last name, ``reflector`` for ``pycm.cache.reflector``, as
klog matches a Go file's name; a pattern with a dot matches the whole dotted name), only for
the text format, as KCM. ``--log-flush-frequency``: pycm writes every line at once, which any
frequency allows; the flag is KCM's (default 5s, positive).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pycm.app.config import Config, LogsConfig
from pycm.app.options.checks import one_of
from pycm.app.options.flagset import DURATION, LEVEL, STRING, FlagSet, FlagType, FlagValueError

__all__ = ["LOG_FORMATS", "VMODULE", "LogsOptions", "parse_vmodule"]

_D = LogsConfig()
LOG_FORMATS = ("text", "json")
_SYNTAX = "syntax error: expect comma-separated list of filename=N"


def parse_vmodule(text: str) -> list[tuple[str, int]]:
    """klog's vmodule value: ``pattern=N`` pairs, comma-separated (its error messages)."""
    rules: list[tuple[str, int]] = []
    for item in text.split(","):
        if not item:
            continue
        pattern, eq, level = item.partition("=")
        if not eq or not pattern:
            raise FlagValueError(_SYNTAX)
        try:
            value = int(level, 10)
        except ValueError:
            raise FlagValueError(_SYNTAX) from None
        if value < 0:
            raise FlagValueError("negative value for vmodule level")
        rules.append((pattern, value))
    return rules


VMODULE = FlagType(
    "pattern=N,...",
    parse_vmodule,
    lambda rules: ",".join(f"{p}={n}" for p, n in rules),
    "",
    accumulates=True,
)


@dataclass
class LogsOptions:
    verbosity: int = _D.verbosity
    format: str = _D.format
    vmodule: list[tuple[str, int]] = field(default_factory=lambda: list(_D.vmodule))
    flush_frequency: float = _D.flush_frequency
    legacy_format: str = ""  # --log-format (deprecated); "" when not given

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "verbosity",
            "v",
            LEVEL,
            "number for the log level verbosity: 0 logs what an operator needs, higher numbers "
            "more detail.",
            shorthand="v",
        )
        fs.add(
            self,
            "vmodule",
            "vmodule",
            VMODULE,
            "comma-separated list of pattern=N settings for file-filtered logging (only works "
            "for text log format); a pattern matches a module's last name (reflector), or with "
            "a dot its whole name.",
        )
        fs.add(self, "format", "logging-format", STRING, 'Sets the log format: "json", "text".')
        fs.add(
            self,
            "flush_frequency",
            "log-flush-frequency",
            DURATION,
            "Maximum number of seconds between log flushes (pycm writes every line at once).",
        )
        legacy = fs.add(
            self,
            "legacy_format",
            "log-format",
            STRING,
            "Deprecated: use --logging-format.",
            hidden=True,
        )
        legacy.deprecated = "use --logging-format instead"

    def _format(self) -> str:
        # --logging-format given (not its default) wins over the deprecated name.
        if self.legacy_format and self.format == _D.format:
            return self.legacy_format
        return self.format

    def validate(self) -> list[str]:
        errors = []
        if self.verbosity < 0:
            errors.append(f"-v {self.verbosity} must not be negative")
        fmt = self._format()
        flag = "log-format" if fmt is self.legacy_format else "logging-format"
        bad_format = one_of(flag, fmt, LOG_FORMATS)
        if bad_format:
            errors.append(bad_format)
        if self.vmodule and fmt != "text":
            errors.append("--vmodule is only supported for the text log format")
        if self.flush_frequency <= 0:
            errors.append("--log-flush-frequency must be greater than 0")
        return errors

    def apply_to(self, config: Config) -> None:
        config.logs = LogsConfig(
            verbosity=self.verbosity,
            format=self._format(),
            vmodule=tuple(self.vmodule),
            flush_frequency=self.flush_frequency,
        )
