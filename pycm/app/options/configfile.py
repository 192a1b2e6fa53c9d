"""The --config file: a YAML mapping whose keys are flag names, merged under the command line.

Keys are the long flag names exactly (``leader-elect-lease-duration: 4s``, ``controllers:
["*", "-replicaset"]``, ``v: 2``); values are what the flag takes, written as YAML scalars (a
list for a ``strings`` flag). The file sets values first and flags given on the command line
override them. Every problem is reported: an unreadable file, YAML that does not parse (with
its line and column), a top level that is not a mapping, an unknown key (with a suggestion),
a key that cannot be set from a file (``config``, ``help``, ``version``), a bad value.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from pycm.app.options.flagset import Flag, go_quote, suggest

__all__ = ["NOT_IN_FILE", "ConfigFile", "load_config_file"]

# Flags that make no sense inside the file itself.
NOT_IN_FILE = frozenset({"config", "help", "version"})


@dataclass
class ConfigFile:
    """What a --config file asks to set (flag, value text), in file order, and its problems."""

    assignments: list[tuple[Flag, str]]
    errors: list[str]


def _text(value: object) -> str | None:
    """A YAML value as the flag text it stands for; None for what no flag takes."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return ",".join(str(v) for v in value)
    return None


def load_config_file(path: str, by_name: dict[str, Flag]) -> ConfigFile:
    where = f"--config {go_quote(path)}"
    out = ConfigFile([], [])
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        out.errors.append(f"{where}: cannot read: {reason}")
        return out
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        out.errors.append(f"{where}: not valid YAML: {_yaml_problem(err)}")
        return out
    if data is None:
        return out  # an empty file sets nothing
    if not isinstance(data, dict):
        out.errors.append(f"{where}: want a mapping of flag names to values at the top level")
        return out
    settable = [name for name in by_name if name not in NOT_IN_FILE]
    for key, value in data.items():
        name = str(key)
        flag = by_name.get(name)
        if flag is None or name in NOT_IN_FILE:
            if name in NOT_IN_FILE:
                out.errors.append(f"{where}: {go_quote(name)} cannot be set in the file")
                continue
            hint = suggest(name.lstrip("-"), settable)
            tail = f" (did you mean {go_quote(hint)}?)" if hint else ""
            out.errors.append(f"{where}: unknown key {go_quote(name)}{tail}")
            continue
        flag_text = _text(value)
        if flag_text is None:
            out.errors.append(
                f"{where}: {name}: want a single value"
                + (" or a list of values" if flag.type.accumulates else "")
                + f", got {type(value).__name__ if value is not None else 'nothing'}"
            )
            continue
        out.assignments.append((flag, flag_text))
    return out


def _yaml_problem(err: yaml.YAMLError) -> str:
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        return f"line {mark.line + 1}, column {mark.column + 1}: {err.problem}"
    return str(err)
