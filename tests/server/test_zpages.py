"""/statusz and /flagz (KEP-4827, KEP-4828): KCM's text layout and structured form, content
negotiation as kube's z-pages do it, and /flagz's redaction — served by the route alone."""

from __future__ import annotations

import random
import re

import httpx
import pytest
import yaml
from starlette.routing import Router

from pycm.server.flagz import flagz_route
from pycm.server.statusz import StatuszInfo, aggregate_paths, statusz_route, uptime_text
from pycm.server.zpages import negotiate

START = 1_780_000_000.0  # a fixed start, 3725 s before "now"
WARNING = (
    "Warning: This endpoint is not meant to be machine parseable, has no formatting "
    "compatibility guarantees and is for debugging purposes only."
)
BETA = "application/json;g=config.k8s.io;v=v1beta1;as={}"
ALPHA = "application/json;g=config.k8s.io;v=v1alpha1;as={}"


def _app(seed: int = 1) -> Router:
    info = StatuszInfo(
        "pycm",
        "0.1.0",
        lambda: ["/healthz", "/healthz/ping", "/metrics", "/configz", "/debug/pycm/events"],
        start_time=START,
        now=lambda: START + 3725,
        runtime_version="python3.11.7",
    )
    flags = {
        "kube-api-qps": "20",
        "leader-elect": "true",
        "otlp-endpoint": "http://user:S3cret@collector:4317",
        "admin-token": "abc",
    }
    return Router(
        routes=[
            statusz_route(info, random.Random(seed)),
            flagz_route("pycm", flags, random.Random(seed)),
        ]
    )


async def _get(path: str, accept: str | None = None, seed: int = 1) -> httpx.Response:
    transport = httpx.ASGITransport(app=_app(seed))
    headers = {"Accept": accept} if accept is not None else {}
    async with httpx.AsyncClient(transport=transport, base_url="http://z") as http:
        return await http.get(path, headers=headers)


@pytest.mark.parametrize(
    ("accept", "want"),
    [
        pytest.param(None, ("text", ""), id="none"),
        pytest.param("", ("text", ""), id="empty"),
        pytest.param("text/plain", ("text", ""), id="text"),
        pytest.param("text/plain;charset=utf-8", ("text", ""), id="text-utf8"),
        pytest.param("*/*", ("text", ""), id="wildcard"),
        pytest.param(BETA.format("Statusz"), ("json", "v1beta1"), id="json-beta"),
        pytest.param(ALPHA.format("Statusz"), ("json", "v1alpha1"), id="json-alpha"),
        pytest.param(
            "application/yaml;g=config.k8s.io;v=v1beta1;as=Statusz", ("yaml", "v1beta1"), id="yaml"
        ),
        pytest.param(
            "application/json;v=foo;g=config.k8s.io;as=Statusz,*/*", ("text", ""), id="bad-then-any"
        ),
        pytest.param(
            f"{ALPHA.format('Statusz')},{BETA.format('Statusz')}",
            ("json", "v1alpha1"),
            id="first-listed-wins",
        ),
        pytest.param(
            f"{ALPHA.format('Statusz')};q=0.5,{BETA.format('Statusz')}",
            ("json", "v1beta1"),
            id="quality-orders",
        ),
        pytest.param("application/json", None, id="json-names-no-version"),
        pytest.param("application/json;v=v1beta1;g=config.k8s.io", None, id="json-without-as"),
        pytest.param(BETA.format("Flagz"), None, id="another-kind"),
        pytest.param("application/xml", None, id="xml"),
        pytest.param("text/plain;q=0", None, id="refused-text"),
    ],
)
def test_zpage_negotiation_as_kube(accept: str | None, want: tuple[str, str] | None) -> None:
    got = negotiate(accept, "Statusz")
    assert (None if got is None else (got.form, got.version)) == want


@pytest.mark.asyncio
async def test_statusz_text_has_kcm_layout_with_one_delimiter() -> None:
    response = await _get("/statusz")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    lines = response.text.split("\n")
    assert lines[:3] == ["", "pycm statusz", WARNING]
    assert lines[3] == ""
    delim = re.match(r"Up(: |:|=| )", lines[5])
    assert delim is not None
    d = delim.group(1)
    assert lines[4].startswith(f"Started{d} ")
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \S+ \d{4}", lines[4][len(d) + 8 :])
    assert lines[5:9] == [
        f"Up{d} 1 hr 02 min 05 sec",
        f"Go version{d} python3.11.7",
        f"Binary version{d} 0.1.0",
        "",  # no emulation version
    ]
    assert lines[9] == f"Paths{d} /configz /debug /healthz /metrics"
    assert lines[10:] == [""]


@pytest.mark.asyncio
async def test_statusz_delimiter_changes_between_responses() -> None:
    seen = set()
    for seed in range(12):
        text = (await _get("/statusz", seed=seed)).text
        seen.add(re.search(r"\nUp(.*?)1 hr", text).group(1))  # type: ignore[union-attr]
    assert len(seen) > 1 and seen <= {": ", ":  ", "= ", "  "}


@pytest.mark.asyncio
async def test_statusz_structured_json_beta() -> None:
    response = await _get("/statusz", BETA.format("Statusz"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert "warning" not in response.headers
    assert response.json() == {
        "kind": "Statusz",
        "apiVersion": "config.k8s.io/v1beta1",
        "metadata": {"name": "pycm"},
        "startTime": "2026-05-28T20:26:40Z",
        "uptimeSeconds": 3725,
        "goVersion": "python3.11.7",
        "binaryVersion": "0.1.0",
        "paths": ["/configz", "/debug", "/healthz", "/metrics"],
    }


@pytest.mark.asyncio
async def test_statusz_alpha_answers_with_the_deprecation_warning() -> None:
    response = await _get("/statusz", ALPHA.format("Statusz"))
    assert response.json()["apiVersion"] == "config.k8s.io/v1alpha1"
    assert response.headers["warning"] == (
        '299 - "This version of the statusz endpoint is deprecated. Please use a newer version."'
    )


@pytest.mark.asyncio
async def test_statusz_unacceptable_is_kube_406() -> None:
    response = await _get("/statusz", "application/json")
    assert response.status_code == 406
    body = response.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "NotAcceptable", 406)
    assert body["message"].startswith("only the following media types are accepted: ")


@pytest.mark.asyncio
async def test_flagz_text_lists_every_flag_sorted_with_secrets_redacted() -> None:
    response = await _get("/flagz")
    lines = response.text.split("\n")
    assert lines[:3] == ["", "pycm flagz", WARNING]
    d = re.match(r"admin-token(: |:|=| )", lines[3]).group(1)  # type: ignore[union-attr]
    assert lines[3:] == [
        f"admin-token{d}(withheld)",
        f"kube-api-qps{d}20",
        f"leader-elect{d}true",
        f"otlp-endpoint{d}http://user:xxxxx@collector:4317",
        "",
    ]
    assert "S3cret" not in response.text and "abc" not in response.text


@pytest.mark.asyncio
async def test_flagz_structured_yaml_and_json() -> None:
    as_json = (await _get("/flagz", BETA.format("Flagz"))).json()
    assert as_json == {
        "kind": "Flagz",
        "apiVersion": "config.k8s.io/v1beta1",
        "metadata": {"name": "pycm"},
        "flags": {
            "admin-token": "(withheld)",
            "kube-api-qps": "20",
            "leader-elect": "true",
            "otlp-endpoint": "http://user:xxxxx@collector:4317",
        },
    }
    response = await _get("/flagz", "application/yaml;g=config.k8s.io;v=v1beta1;as=Flagz")
    assert response.headers["content-type"] == "application/yaml"
    assert yaml.safe_load(response.text) == as_json


def test_statusz_helpers_match_kube() -> None:
    assert uptime_text(0) == "0 hr 00 min 00 sec"
    assert uptime_text(90061) == "25 hr 01 min 01 sec"
    assert aggregate_paths(["/", "", "/apis/x", "/statusz", "/livez/ping", "/livez"]) == ["/livez"]
