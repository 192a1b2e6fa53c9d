"""Logging for ``pycm run`` (``--logging-format``, ``-v``, ``--vmodule``): text (klog-like) or
JSON lines, with the trace context when inside a step, so a log line can be found in Jaeger by
its trace id.

One record is one line, whoever logged it: in both formats the message passes
:func:`pycm.util.escape.escape_control` (a CR, LF, NUL or ESC that a client smuggled into a path
or a name shows as ``\\n``, ``\\x00``, ``\\x1b``) and :func:`pycm.util.redact.redact_text` (a URL's
userinfo password shows as ``xxxxx``). The request logging escapes its fields at the source as
well; this is the guarantee for every other logger, third-party ones included. A traceback is
the one multi-line part of a text record, and it follows the escaped message.
"""

from __future__ import annotations

import fnmatch
import logging
import sys
import time
from collections.abc import Sequence
from typing import TextIO

import orjson

from pycm.trace.context import current_span
from pycm.util.escape import escape_control
from pycm.util.redact import redact_text

__all__ = ["configure_logging", "safe_message"]


def safe_message(record: logging.LogRecord) -> str:
    """The record's message as it may be written: control characters escaped, URL passwords
    masked."""
    return escape_control(redact_text(record.getMessage()))


class _TraceContext(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        span = current_span()
        record.trace_id, record.span_id = span if span is not None else ("", "")
        return True


class _TextFormatter(logging.Formatter):
    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = safe_message(record)
        return super().formatMessage(record)

    def formatException(self, ei: logging._SysExcInfoType) -> str:
        return redact_text(super().formatException(ei))


class _JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": safe_message(record),
        }
        if getattr(record, "trace_id", ""):
            out["trace_id"] = record.trace_id  # type: ignore[attr-defined]
            out["span_id"] = record.span_id  # type: ignore[attr-defined]
        if record.exc_info:
            out["error"] = redact_text(self.formatException(record.exc_info))
        return orjson.dumps(out).decode()


class _VModule(logging.Filter):
    """--vmodule: a DEBUG record passes when the global verbosity allows it or a rule for its
    logger's module does (klog's verbosity 4 and up is pycm's DEBUG)."""

    def __init__(self, rules: Sequence[tuple[str, int]], verbosity: int) -> None:
        super().__init__()
        self._rules = list(rules)
        self._verbosity = verbosity
        self._decided: dict[str, bool] = {}  # logger name -> DEBUG allowed

    def _allows(self, name: str) -> bool:
        level = self._verbosity
        for pattern, value in self._rules:
            subject = name if "." in pattern else name.rsplit(".", 1)[-1]
            if fnmatch.fnmatchcase(subject, pattern):
                level = value
                break  # klog: the first matching pattern wins
        return level >= 4

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG:
            return True
        allowed = self._decided.get(record.name)
        if allowed is None:
            allowed = self._decided[record.name] = self._allows(record.name)
        return allowed


def configure_logging(
    fmt: str = "text",
    verbosity: int = 0,
    stream: TextIO | None = None,
    *,
    vmodule: Sequence[tuple[str, int]] = (),
) -> None:
    """Install one handler on the root logger (replacing earlier ones), writing to ``stream``
    (stderr by default); ``vmodule`` rules raise (or lower) single modules' verbosity."""
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.addFilter(_TraceContext())
    if vmodule:
        handler.addFilter(_VModule(vmodule, verbosity))
    if fmt == "json":
        handler.setFormatter(_JSONFormatter())
    else:
        handler.setFormatter(
            _TextFormatter("%(levelname).1s%(asctime)s %(name)s] %(message)s", "%m%d %H:%M:%S")
        )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    debug = verbosity >= 4 or any(value >= 4 for _, value in vmodule)
    # (with --vmodule the root lets DEBUG through and the handler's filter picks the modules)
    root.setLevel(logging.DEBUG if debug else logging.INFO if verbosity >= 0 else logging.WARNING)
    # Third-party chatter stays at warnings unless asked for.
    for noisy in ("httpx", "httpcore", "uvicorn", "uvicorn.error"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if verbosity >= 6 else logging.WARNING)
