"""Help in cobra's manner, with component-base's named sections (KCM's usage and help funcs).

The help function prints the long description, ``Usage:`` with the use line, then every
section::

    <Section> flags:

          --flag type   usage (default X)

Within a section flags are sorted by name and their usage starts in one column, as pflag's
``FlagUsages``; a default is shown only when it is not the type's zero value (pflag's rule), with
strings quoted. The usage function prints the same without the description. ``cols`` wraps
usage text to a terminal width; 0 (output not a terminal) does not wrap, as KCM.
"""

from __future__ import annotations

import textwrap

from pycm.app.options.flagset import Flag, FlagSet, NamedFlagSets, go_quote

__all__ = ["flag_usages", "render_help", "render_sections", "render_usage"]

# pflag wraps only when at least this many columns remain for the usage text.
_MIN_USAGE_COLUMNS = 24


def _left(flag: Flag) -> str:
    line = f"  -{flag.shorthand}, --{flag.name}" if flag.shorthand else f"      --{flag.name}"
    if flag.type.name:
        line += f" {flag.type.name}"
    return line


def _usage(flag: Flag) -> str:
    text = flag.usage
    if flag.default != flag.type.zero:
        shown = go_quote(flag.default) if flag.type.quoted else flag.default
        text += f" (default {shown})"
    return text


def _wrap(indent: int, cols: int, text: str) -> str:
    pad = "\n" + " " * indent
    width = cols - indent
    if cols == 0 or width < _MIN_USAGE_COLUMNS:
        return text.replace("\n", pad)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        lines.extend(textwrap.wrap(paragraph, width, break_on_hyphens=False) or [""])
    return pad.join(lines)


def flag_usages(flag_set: FlagSet, cols: int = 0) -> str:
    """One section's flag lines (each ending in a newline)."""
    flags = sorted((f for f in flag_set.flags if not f.hidden), key=lambda f: f.name)
    lefts = [_left(flag) for flag in flags]
    column = max((len(left) for left in lefts), default=0) + 3
    return "".join(
        f"{left.ljust(column)}{_wrap(column, cols, _usage(flag))}\n"
        for left, flag in zip(lefts, flags, strict=True)
    )


def render_sections(flags: NamedFlagSets, cols: int = 0) -> str:
    """Every section with a flag to show (hidden ones are not): a blank line, ``<Title>
    flags:``, a blank line, its flags."""
    return "".join(
        f"\n{fs.title[:1].upper()}{fs.title[1:]} flags:\n\n{flag_usages(fs, cols)}"
        for fs in flags.sets
        if any(not f.hidden for f in fs.flags)
    )


def render_usage(use_line: str, flags: NamedFlagSets, cols: int = 0) -> str:
    """Cobra's usage function as KCM sets it: the use line, then the sections."""
    return f"Usage:\n  {use_line}\n{render_sections(flags, cols)}"


def render_help(long: str, use_line: str, flags: NamedFlagSets, cols: int = 0) -> str:
    """Cobra's help function as KCM sets it: the long description, then the usage."""
    return f"{long}\n\n{render_usage(use_line, flags, cols)}"
