"""``/flagz`` (KEP-4828, KCM's since 1.32, beta and on by default in 1.36): every command-line
flag and its value — the value given, else the default — as text (``name<delim>value`` a line,
sorted by name, after the z-page warning) or as ``config.k8s.io`` ``Flagz`` (v1beta1; v1alpha1
deprecated); see :mod:`pycm.server.zpages` for the negotiation.

Secret values never leave: the flags are given already redacted by the one rule /configz and
the logs use (:meth:`pycm.app.options.flagset.Flag.shown`: a secret flag's value withheld, a
URL's password masked), where KCM prints ``CLASSIFIED`` for the flags it marks so.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pycm.server.zpages import header, zpage_response
from pycm.util.redact import redact_value

__all__ = ["FLAGZ_PATH", "flagz_route"]

FLAGZ_PATH = "/flagz"

Flags = Mapping[str, str] | Callable[[], Mapping[str, str]]


def flagz_route(component: str, flags: Flags, rng: random.Random | None = None) -> Route:
    """``flags``: name → value as shown (redacted by the caller; each value passes the
    redaction rule again here, by its name, whatever the caller gave)."""
    chooser = rng or random.Random()

    def current() -> dict[str, str]:
        given = flags() if callable(flags) else flags
        return {name: redact_value(name, value) for name, value in given.items()}

    def text(delim: str) -> str:
        values = current()
        lines = "".join(f"{name}{delim}{values[name]}\n" for name in sorted(values))
        return header(component, "flagz") + lines

    def structured(api_version: str) -> Mapping[str, Any]:
        return {
            "kind": "Flagz",
            "apiVersion": api_version,
            "metadata": {"name": component},
            "flags": dict(sorted(current().items())),
        }

    async def handle(request: Request) -> Response:
        return zpage_response(
            request, page="flagz", kind="Flagz", text=text, structured=structured, rng=chooser
        )

    return Route(FLAGZ_PATH, handle, methods=["GET"])
