"""Flags as Go's pflag has them, in named sections as component-base's NamedFlagSets.

A :class:`Flag` is bound to an attribute of an option object (pflag's ``DurationVar(&o.X, …)``):
setting it converts the text and stores the typed value there. Its default is whatever the
attribute held when the flag was defined.

:func:`parse` reads a command line with pflag's rules, and collects every problem instead of
stopping at the first (argparse's habit):

- ``--name=value`` and ``--name value``; a bool flag takes a value only after ``=``
  (``--leader-elect``, ``--leader-elect=false``), so ``--leader-elect false`` leaves ``false``
  as a stray argument;
- ``-v 3``, ``-v=3``, ``-v3`` for flags with a shorthand;
- ``--`` ends the flags; no prefix abbreviation (``--kube`` is not ``--kubeconfig``);
- an unknown ``--name`` without ``=`` takes the next argument along as its value unless that
  looks like a flag, so one typo is one error;
- ``strings`` flags split on commas, and a repeated flag appends (``--controllers=a
  --controllers=b`` is ``[a, b]``), as pflag's stringSlice.

Errors read as pflag's: ``unknown flag: --nmae (did you mean --name?)``, ``invalid argument "x"
for "--kube-api-qps" flag: …``, ``flag needs an argument: --kubeconfig``.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pycm.util.durations import DurationError, format_duration, parse_duration
from pycm.util.redact import WITHHELD, is_secret_name, redact_value

__all__ = [
    "BOOL",
    "DURATION",
    "FLOAT32",
    "INT",
    "INT32",
    "IP",
    "LEVEL",
    "SIGNED_DURATION",
    "STRING",
    "STRINGS",
    "Flag",
    "FlagSet",
    "FlagType",
    "NamedFlagSets",
    "ParsedArgs",
    "go_quote",
    "is_secret_flag",
    "parse",
]


def go_quote(text: str) -> str:
    """A string as Go's ``%q`` prints it (close enough: JSON's escaping)."""
    return json.dumps(text, ensure_ascii=False)


class FlagValueError(ValueError):
    """A flag value that does not convert; the message says why."""


@dataclass(frozen=True)
class FlagType:
    """How one kind of flag value is read, printed and shown in help (pflag's Value types)."""

    name: str  # the type word in help ("duration", "int32"); "" for bools
    parse: Callable[[str], Any]  # raises FlagValueError
    format: Callable[[Any], str]  # Go's Value.String()
    zero: str  # the formatted zero value: a default equal to it is not shown in help
    quoted: bool = False  # string defaults are shown quoted: (default "leases")
    accumulates: bool = False  # a repeated flag appends (stringSlice)


_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _parse_bool(text: str) -> bool:
    try:
        return _BOOLS[text]
    except KeyError:
        raise FlagValueError("want true or false (or 1, t, T, TRUE, True, 0, f, F, …)") from None


def _int_parser(bits: int) -> Callable[[str], int]:
    limit = 2 ** (bits - 1)

    def parse_int(text: str) -> int:
        if not _INT.fullmatch(text):
            raise FlagValueError("not an integer")
        value = int(text)
        if not -limit <= value < limit:
            raise FlagValueError(f"out of range for a {bits}-bit integer")
        return value

    return parse_int


def _parse_float(text: str) -> float:
    if not _FLOAT.fullmatch(text):
        raise FlagValueError("not a number")
    value = float(text)
    if not math.isfinite(value):
        raise FlagValueError("out of range")
    return value


def _format_float(value: float) -> str:
    """Go's shortest 'g' formatting: 20 → "20", 0.1 → "0.1"."""
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def _parse_duration(text: str) -> float:
    try:
        return parse_duration(text)
    except DurationError as err:
        raise FlagValueError(str(err)) from None


def _parse_signed_duration(text: str) -> float:
    try:
        return parse_duration(text, allow_negative=True)
    except DurationError as err:
        raise FlagValueError(str(err)) from None


def _parse_ip(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise FlagValueError(f"failed to parse IP: {go_quote(text)}") from None


def _parse_strings(text: str) -> list[str]:
    # pflag reads the value as one CSV record; an empty value is an empty list.
    return [item.strip() for item in text.split(",")] if text else []


BOOL = FlagType("", _parse_bool, lambda v: "true" if v else "false", "false")
INT = FlagType("int", _int_parser(64), str, "0")
INT32 = FlagType("int32", _int_parser(32), str, "0")
LEVEL = FlagType("Level", _int_parser(32), str, "0")
FLOAT32 = FlagType("float32", _parse_float, _format_float, "0")
STRING = FlagType("string", str, str, "", quoted=True)
STRINGS = FlagType(
    "strings", _parse_strings, lambda v: "[" + ",".join(v) + "]", "[]", accumulates=True
)
DURATION = FlagType("duration", _parse_duration, format_duration, "0s")
SIGNED_DURATION = FlagType("duration", _parse_signed_duration, format_duration, "0s")
IP = FlagType("ip", _parse_ip, str, "<nil>")


def is_secret_flag(name: str) -> bool:
    """The rule for withholding a value from FlagsParsed, /configz and logs: the one rule of
    :func:`pycm.util.redact.is_secret_name` (a segment ``token``, ``password``, ``passwd``,
    ``secret`` or ``credential``, or its plural, unless the flag names a path: ``-file``,
    ``-dir``, ``-path``, ``-kubeconfig``). :class:`Flag` also exempts bools
    (``--use-service-account-credentials`` is a switch, not a credential) and takes an explicit
    ``secret=`` over the rule."""
    return is_secret_name(name)


class Flag:
    """One flag bound to ``target.<attr>``. ``default`` is the formatted value at definition."""

    __slots__ = (
        "attr",
        "default",
        "deprecated",
        "hidden",
        "name",
        "secret",
        "section",
        "shorthand",
        "target",
        "type",
        "usage",
    )

    def __init__(
        self,
        target: object,
        attr: str,
        name: str,
        flag_type: FlagType,
        usage: str,
        *,
        shorthand: str = "",
        section: str = "",
        secret: bool | None = None,
        hidden: bool = False,
    ) -> None:
        self.target = target
        self.attr = attr
        self.name = name
        self.type = flag_type
        self.usage = usage
        self.shorthand = shorthand
        self.section = section
        self.secret = (is_secret_flag(name) and flag_type is not BOOL) if secret is None else secret
        # pflag's MarkHidden: parsed as any flag, left out of help and of "did you mean".
        self.hidden = hidden
        # pflag's MarkDeprecated (set after definition): hidden too, and using it says so.
        self.deprecated = ""
        self.default = self.value_text()

    def get(self) -> Any:
        return getattr(self.target, self.attr)

    def value_text(self) -> str:
        """The current value as Go prints it (a duration as "15s", a list as "[a,b]")."""
        return self.type.format(self.get())

    def shown(self, text: str) -> str:
        """``text`` (a value of this flag) as it may be shown: withheld for a secret flag, else
        by the one redaction rule (:func:`pycm.util.redact.redact_value`)."""
        return WITHHELD if self.secret and text else redact_value(self.name, text)

    @property
    def display(self) -> str:
        """The flag as error messages name it: ``--name`` or ``-v, --v``."""
        return f"-{self.shorthand}, --{self.name}" if self.shorthand else f"--{self.name}"

    def set(self, text: str, *, append: bool = False) -> None:
        """Convert ``text`` and store it (appended to a list when ``append``); on a bad value
        raise FlagValueError with pflag's message and leave the value as it was."""
        try:
            value = self.type.parse(text)
        except FlagValueError as err:
            raise FlagValueError(
                f"invalid argument {go_quote(self.shown(text))} for {go_quote(self.display)} "
                f"flag: {err}"
            ) from None
        if append and self.type.accumulates:
            value = [*self.get(), *value]
        setattr(self.target, self.attr, value)


class FlagSet:
    """One titled section of flags, in definition order (help sorts them by name)."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.flags: list[Flag] = []

    def add(
        self,
        target: object,
        attr: str,
        name: str,
        flag_type: FlagType,
        usage: str,
        *,
        shorthand: str = "",
        secret: bool | None = None,
        hidden: bool = False,
    ) -> Flag:
        flag = Flag(
            target,
            attr,
            name,
            flag_type,
            usage,
            shorthand=shorthand,
            section=self.title,
            secret=secret,
            hidden=hidden,
        )
        self.flags.append(flag)
        return flag


class NamedFlagSets:
    """Sections in the order they were first asked for (component-base's NamedFlagSets)."""

    def __init__(self) -> None:
        self._sets: dict[str, FlagSet] = {}

    def flag_set(self, title: str) -> FlagSet:
        if title not in self._sets:
            self._sets[title] = FlagSet(title)
        return self._sets[title]

    @property
    def sets(self) -> list[FlagSet]:
        return list(self._sets.values())

    def __iter__(self) -> Iterator[Flag]:
        for flag_set in self._sets.values():
            yield from flag_set.flags

    def index(self) -> tuple[dict[str, Flag], dict[str, Flag]]:
        """Flags by long name and by shorthand; a name defined twice is a programming error."""
        by_name: dict[str, Flag] = {}
        by_short: dict[str, Flag] = {}
        for flag in self:
            if flag.name in by_name:
                raise ValueError(f"flag --{flag.name} is defined twice")
            by_name[flag.name] = flag
            if flag.shorthand:
                if flag.shorthand in by_short:
                    raise ValueError(f"shorthand -{flag.shorthand} is defined twice")
                by_short[flag.shorthand] = flag
        return by_name, by_short


def suggest(name: str, candidates: Iterator[str] | list[str]) -> str | None:
    """The closest known name, if one is close enough to be a likely typo."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


@dataclass
class ParsedArgs:
    """A tokenised command line: what to set, in order, and what was wrong with it.

    ``warnings``: pflag's lines for deprecated flags used ("Flag --x has been deprecated, …"),
    one per use, in order."""

    assignments: list[tuple[Flag, str]]
    positionals: list[str]
    errors: list[str]
    warnings: list[str] = field(default_factory=list)

    def assign(self, flag: Flag, value: str) -> None:
        self.assignments.append((flag, value))
        if flag.deprecated:
            self.warnings.append(f"Flag --{flag.name} has been deprecated, {flag.deprecated}")


def parse(flags: NamedFlagSets, argv: list[str]) -> ParsedArgs:
    """Tokenise ``argv`` with pflag's rules (see the module docstring); set nothing yet."""
    by_name, by_short = flags.index()
    out = ParsedArgs([], [], [])
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--":
            out.positionals.extend(args)
            break
        if arg.startswith("--"):
            _parse_long(arg, args, by_name, out)
        elif arg.startswith("-") and arg != "-":
            _parse_short(arg, args, by_short, out)
        else:
            out.positionals.append(arg)
    return out


def _parse_long(arg: str, args: list[str], by_name: dict[str, Flag], out: ParsedArgs) -> None:
    name, eq, value = arg[2:].partition("=")
    if not name or name.startswith("-"):
        out.errors.append(f"bad flag syntax: {arg}")
        return
    flag = by_name.get(name)
    if flag is None:
        hint = suggest(name, [n for n, f in by_name.items() if not f.hidden])
        tail = f" (did you mean --{hint}?)" if hint else ""
        out.errors.append(f"unknown flag: --{name}{tail}")
        if not eq and args and not args[0].startswith("-"):
            # Most likely the unknown flag's value: reporting it as a stray argument too
            # would only be noise (pflag stops at the first error, so it never says).
            args.pop(0)
        return
    if eq:
        out.assign(flag, value)
    elif flag.type is BOOL:
        out.assign(flag, "true")
    elif args:
        out.assign(flag, args.pop(0))
    else:
        out.errors.append(f"flag needs an argument: --{name}")


def _parse_short(arg: str, args: list[str], by_short: dict[str, Flag], out: ParsedArgs) -> None:
    shorthands = arg[1:]
    while shorthands:
        char, shorthands = shorthands[0], shorthands[1:]
        flag = by_short.get(char)
        if flag is None:
            out.errors.append(f"unknown shorthand flag: {char!r} in {arg}")
            return
        if shorthands.startswith("="):
            out.assign(flag, shorthands[1:])
            return
        if flag.type is BOOL:
            out.assign(flag, "true")
            continue
        if shorthands:
            out.assign(flag, shorthands)
            return
        if args:
            out.assign(flag, args.pop(0))
            return
        out.errors.append(f"flag needs an argument: {char!r} in {arg}")
        return
