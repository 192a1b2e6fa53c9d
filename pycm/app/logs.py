"""Logging for ``pycm run``: text (klog-like) or JSON lines, with the trace context when inside
a step, so a log line can be found in Jaeger by its trace id."""

from __future__ import annotations

import logging
import sys
import time

import orjson

from pycm.trace.context import current_span

__all__ = ["configure_logging"]


class _TraceContext(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        span = current_span()
        record.trace_id, record.span_id = span if span is not None else ("", "")
        return True


class _JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if getattr(record, "trace_id", ""):
            out["trace_id"] = record.trace_id  # type: ignore[attr-defined]
            out["span_id"] = record.span_id  # type: ignore[attr-defined]
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return orjson.dumps(out).decode()


def configure_logging(fmt: str = "text", verbosity: int = 0) -> None:
    """Install one stderr handler on the root logger (replacing earlier ones)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_TraceContext())
    if fmt == "json":
        handler.setFormatter(_JSONFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(levelname).1s%(asctime)s %(name)s] %(message)s", "%m%d %H:%M:%S")
        )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(
        logging.DEBUG if verbosity >= 4 else logging.INFO if verbosity >= 0 else logging.WARNING
    )
    # Third-party chatter stays at warnings unless asked for.
    for noisy in ("httpx", "httpcore", "uvicorn", "uvicorn.error"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if verbosity >= 6 else logging.WARNING)
