"""Pure formatting of snapshot values for the views (no clock: "now" is the snapshot's now_ts)."""

from __future__ import annotations

from typing import Literal

from rich.text import Text

from pycm.trace.state import HistogramSnapshot

__all__ = ["bar", "count", "dur_ns", "ms", "rate", "role_text", "since_ns"]


def ms(value: float | None) -> str:
    """Milliseconds, short: 0.42ms, 12ms, 1.5s."""
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value / 1000:.1f}s"
    if value >= 10:
        return f"{value:.0f}ms"
    return f"{value:.2f}ms"


def dur_ns(value: int) -> str:
    if value <= 0:
        return "-"
    return ms(value / 1e6)


def since_ns(now_ts: int, ts: int) -> str:
    """How long before ``now_ts`` the moment ``ts`` was ("-" when unknown)."""
    if not ts or not now_ts:
        return "-"
    return f"{max(0, now_ts - ts) / 1e9:.1f}s ago"


def rate(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}/s"
    return f"{value:.1f}/s"


def count(value: int) -> str:
    return f"{value:,}"


_ROLE_STYLE = {"leader": "bold green", "standby": "cyan", "stopped": "red", "unknown": "dim"}


def role_text(role: str) -> Text:
    return Text(role, style=_ROLE_STYLE.get(role, ""))


def bar(
    fraction: float, width: int, *, style: str = "green", marks: dict[int, str] | None = None
) -> Text:
    """A horizontal gauge ``width`` cells wide filled to ``fraction`` (clamped to 0..1); ``marks``
    puts a character at given cells (e.g. the renew deadline)."""
    fraction = min(1.0, max(0.0, fraction))
    filled = round(fraction * width)
    text = Text()
    for i in range(width):
        mark = (marks or {}).get(i)
        if mark is not None:
            text.append(mark, style="bold")
        elif i < filled:
            text.append("█", style=style)
        else:
            text.append("░", style="dim")
    return text


def hist(
    h: HistogramSnapshot | None, key: Literal["min", "max", "p50", "p90", "p99"]
) -> float | None:
    """A percentile (or the min or max) of a snapshot histogram (None when empty)."""
    if not h or not h["count"]:
        return None
    value = h[key]
    return float(value) if isinstance(value, int | float) else None
