"""Cron schedules as kube-apiserver checks a CronJob's ``spec.schedule``: the standard
five-field parser of ``robfig/cron`` (``ParseStandard``), with its error texts.

Accepted: five fields separated by spaces (minute 0-59, hour 0-23, day of month 1-31, month
1-12 or ``jan``-``dec``, day of week 0-6 or ``sun``-``sat``), each a comma list of ``*``/``?``,
``N``, ``N-M``, each optionally ``/step``; or a descriptor (``@yearly``, ``@annually``,
``@monthly``, ``@weekly``, ``@daily``, ``@midnight``, ``@hourly``, ``@every <duration>``); a
``TZ=``/``CRON_TZ=`` prefix is parsed off (kube refuses it separately). Only validity is
decided: no schedule is ever run (there is no CronJob controller).
"""

from __future__ import annotations

from pycm.sim.gostrconv import parse_duration

__all__ = ["schedule_error"]

_MONTH_NAMES = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# (min, max, names) of minute, hour, day of month, month, day of week.
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)
_DESCRIPTORS = frozenset(
    ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
)


def _atoi(expr: str) -> int:
    """Go's strconv.Atoi with robfig's wrapping of its error."""
    text = expr[1:] if expr[:1] in "+-" else expr
    if not text or not text.isascii() or not text.isdigit():
        raise ValueError(
            f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax'
        )
    num = int(expr)
    if num >= 2**63 or num < -(2**63):
        raise ValueError(
            f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": value out of range'
        )
    if num < 0:
        raise ValueError(f"negative number ({num}) not allowed: {expr}")
    return num


def _int_or_name(expr: str, names: dict[str, int]) -> int:
    named = names.get(expr.lower())
    return named if named is not None else _atoi(expr)


def _check_range(expr: str, low: int, high: int, names: dict[str, int]) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], names)
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 2:
        step = _atoi(range_and_step[1])
        if len(low_and_high) == 1:
            end = high  # "N/step" means "N-max/step"
    elif len(range_and_step) > 2:
        raise ValueError(f"too many slashes: {expr}")
    else:
        step = 1
    if start < low:
        raise ValueError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise ValueError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ValueError(f"step of range should be a positive number: {expr}")


def schedule_error(schedule: str) -> str | None:
    """robfig/cron's error for ``schedule`` (ParseStandard), or None if it parses."""
    spec = schedule
    if not spec:
        return "empty spec string"
    if spec.startswith(("TZ=", "CRON_TZ=")):
        spec = spec.partition(" ")[2].strip()  # (the zone itself is not checked here)
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return None
        if spec.startswith("@every "):
            text = spec[len("@every ") :]
            try:
                parse_duration(text)
            except ValueError as err:
                return f"failed to parse duration {spec}: {err}"
            return None
        return f"unrecognized descriptor: {spec}"
    fields = spec.split()
    if len(fields) != 5:
        shown = "[" + " ".join(fields) + "]"
        return f"expected exactly 5 fields, found {len(fields)}: {shown}"
    try:
        for field, (low, high, names) in zip(fields, _BOUNDS, strict=True):
            for expr in field.split(","):
                _check_range(expr, low, high, names)
    except ValueError as err:
        return str(err)
    return None
