"""What /statusz and /flagz share (KEP-4827, KEP-4828; apiserver's ``server/statusz`` and
``server/flagz``): the text header, the random delimiter, and the content negotiation.

Negotiation, as kube's for the z-pages:

- no ``Accept`` (or an empty one) → the text form, ``text/plain; charset=utf-8``;
- otherwise each media range in preference order (q-values; q=0 refused): ``text/plain``,
  ``text/*`` or ``*/*`` → the text form; ``application/json`` or ``application/yaml`` with
  ``g=config.k8s.io``, ``v=v1beta1`` (or the deprecated ``v1alpha1``, answered with a
  ``Warning: 299`` header) and ``as=<Kind>`` → the structured object in that version. Any other
  range is passed over (``application/json`` alone names no version: pycm, like kube, does
  not guess one);
- nothing acceptable → 406 with kube's Status, "only the following media types are
  accepted: …".

The text form is for people: kube picks one of four delimiters at random for each response
(``:``, ``: ``, ``=``, a space) precisely so that no one parses it; pycm does the same.
"""

from __future__ import annotations

import html
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson
import yaml
from starlette.requests import Request
from starlette.responses import Response

__all__ = [
    "DELIMITERS",
    "GROUP",
    "Negotiated",
    "escape",
    "header",
    "negotiate",
    "not_acceptable",
    "zpage_response",
]

GROUP: Final = "config.k8s.io"
VERSIONS: Final = ("v1beta1", "v1alpha1")
DEPRECATED: Final = frozenset({"v1alpha1"})
DELIMITERS: Final = (":", ": ", "=", " ")
_STRUCTURED = {"application/json": "json", "application/yaml": "yaml"}
_ACCEPTED = "application/json, application/yaml, text/plain"


def header(component: str, page: str) -> str:
    """The warning every text z-page starts with (kube's ``headerFmt``)."""
    return (
        f"\n{component} {page}\nWarning: This endpoint is not meant to be machine parseable, "
        "has no formatting compatibility guarantees and is for debugging purposes only.\n"
    )


def escape(text: str) -> str:
    """Go's ``html.EscapeString`` (the statusz values pass through it)."""
    return html.escape(text, quote=True).replace("&#x27;", "&#39;")


@dataclass(frozen=True)
class Negotiated:
    """What to answer: ``form`` "text", "json" or "yaml"; ``version`` for the structured."""

    form: str
    version: str = ""


def _ranges(accept: str) -> list[tuple[str, dict[str, str], float]]:
    """The media ranges of an Accept header, most preferred first (stable among equals)."""
    out = []
    for part in accept.split(","):
        pieces = [p.strip() for p in part.split(";")]
        media = pieces[0].lower()
        if "/" not in media:
            continue
        params: dict[str, str] = {}
        quality = 1.0
        for piece in pieces[1:]:
            key, _, value = piece.partition("=")
            key, value = key.strip().lower(), value.strip().strip('"')
            if key == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
            elif key:
                params[key] = value
        out.append((media, params, quality))
    return sorted((r for r in out if r[2] > 0), key=lambda r: -r[2])


def negotiate(accept: str | None, kind: str) -> Negotiated | None:
    """The answer for ``accept`` (None: nothing acceptable, a 406)."""
    if accept is None or not accept.strip():
        return Negotiated("text")
    for media, params, _ in _ranges(accept):
        if media in ("text/plain", "text/*", "*/*"):
            if set(params) <= {"charset"}:
                return Negotiated("text")
            continue
        form = _STRUCTURED.get(media)
        if form is None:
            continue
        if (
            params.get("g") == GROUP
            and params.get("v") in VERSIONS
            and params.get("as") == kind
            and set(params) <= {"g", "v", "as", "charset"}
        ):
            return Negotiated(form, params["v"])
    return None


def not_acceptable() -> Response:
    """kube's 406 for a z-page (``NewNotAcceptableError`` rendered as a Status)."""
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"only the following media types are accepted: {_ACCEPTED}",
        "reason": "NotAcceptable",
        "code": 406,
    }
    return Response(orjson.dumps(status), 406, media_type="application/json")


def zpage_response(
    request: Request,
    *,
    page: str,
    kind: str,
    text: Callable[[str], str],
    structured: Callable[[str], Mapping[str, Any]],
    rng: random.Random,
) -> Response:
    """The page in the negotiated form: ``text(delimiter)`` or ``structured(api_version)``."""
    answer = negotiate(request.headers.get("accept"), kind)
    if answer is None:
        return not_acceptable()
    if answer.form == "text":
        body = text(rng.choice(DELIMITERS))
        return Response(body, media_type="text/plain; charset=utf-8")
    obj = dict(structured(f"{GROUP}/{answer.version}"))
    headers = {}
    if answer.version in DEPRECATED:
        headers["Warning"] = (
            f'299 - "This version of the {page} endpoint is deprecated. '
            'Please use a newer version."'
        )
    if answer.form == "yaml":
        data = yaml.safe_dump(obj, sort_keys=False).encode()
        return Response(data, headers=headers, media_type="application/yaml")
    return Response(orjson.dumps(obj), headers=headers, media_type="application/json")
