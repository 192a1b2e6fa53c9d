"""Request parameters and bodies the emulator refuses as kube-apiserver does, over real HTTP.

One table of bad requests, each with kube's status code, reason and (a fragment of) its message
— ListOptions (decoding 400s, ValidateListOptions 422s), label and field selectors, the
``timeout`` parameter, Table options, Create/Update/Patch/DeleteOptions, a create carrying a
resourceVersion, nesting depth — and one of good requests that must still be served (kube's own
edge cases among them: ``a notin ()``, ``timeoutSeconds=-1``). No bad request may cost the
emulator an error log (a traceback) or a 500 it did not mean.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycm.sim.auth import ADMIN_GROUP, UserInfo
from pycm.sim.errors import APIError
from pycm.sim.listoptions import list_options, watch_timeout
from pycm.sim.resources import REGISTRY
from pycm.sim.server import Emulator, run_emulator
from pycm.sim.tokens import encode_continue
from pycm.sim.writeoptions import delete_options, validate_write_options

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
NODES = "/api/v1/nodes"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
JSON = {"Content-Type": "application/json"}
MERGE = {"Content-Type": "application/merge-patch+json"}
LIST_INVALID = 'ListOptions.meta.k8s.io "" is invalid: '
LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
    "[A-Za-z0-9])?')"
)


def _cm(name: str, **meta: Any) -> bytes:
    return orjson.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}
    )


def _deep_json(levels: int) -> bytes:
    """``levels`` objects nested in one another (the innermost holds a number)."""
    return b'{"a":' * levels + b"1" + b"}" * levels


def _node_with_deep_spec(name: str, levels: int) -> bytes:
    # A node's spec is opaque to the emulator's pruning: the nesting is kept and stored. The
    # node itself is one of the levels.
    inner = _deep_json(levels - 1)
    return b'{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s"},"spec":%s}' % (
        name.encode(),
        inner,
    )


def _yaml_deep_flow(levels: int) -> bytes:
    return (
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\nx: " + b"[" * levels + b"]" * levels
    )


# (method, url, body, headers, code, reason, message fragment)
Case = tuple[str, str, bytes | None, dict[str, str] | None, int, str, str]

BAD: list[Any] = [
    # ---- ListOptions: decoding (400, Go's strconv) comes first
    pytest.param(
        "GET", f"{CMS}?watch=1&timeoutSeconds=1e20", None, None, 400, "BadRequest",
        'strconv.ParseInt: parsing "1e20": invalid syntax', id="timeoutSeconds-1e20",
    ),
    pytest.param(
        "GET", f"{CMS}?watch=1&timeoutSeconds=100000000000000000000", None, None, 400,
        "BadRequest", 'parsing "100000000000000000000": value out of range',
        id="timeoutSeconds-past-int64",
    ),
    pytest.param(
        "GET", f"{CMS}?limit=abc", None, None, 400, "BadRequest",
        'strconv.ParseInt: parsing "abc": invalid syntax', id="limit-not-a-number",
    ),
    pytest.param(
        "GET", f"{CMS}?limit=", None, None, 400, "BadRequest",
        'strconv.ParseInt: parsing "": invalid syntax', id="limit-empty",
    ),
    pytest.param(
        "GET", f"{CMS}?limit=1.5", None, None, 400, "BadRequest",
        'parsing "1.5": invalid syntax', id="limit-fraction",
    ),
    pytest.param(
        "GET", f"{CMS}?limit=x&labelSelector=-a", None, None, 400, "BadRequest",
        'strconv.ParseInt: parsing "x"', id="integers-decode-before-selectors",
    ),
    # ---- ListOptions: ValidateListOptions (422 with every cause)
    pytest.param(
        "GET", f"{CMS}?resourceVersion=1&resourceVersionMatch=Bogus", None, None, 422, "Invalid",
        LIST_INVALID + 'resourceVersionMatch: Unsupported value: "Bogus": supported values: '
        '"Exact", "NotOlderThan", ""', id="rvm-bogus",
    ),
    pytest.param(
        "GET", f"{CMS}?resourceVersionMatch=NotOlderThan", None, None, 422, "Invalid",
        LIST_INVALID + "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden "
        "unless resourceVersion is provided", id="rvm-without-rv",
    ),
    pytest.param(
        "GET", f"{CMS}?resourceVersionMatch=Bogus", None, None, 422, "Invalid",
        LIST_INVALID + "[resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden "
        'unless resourceVersion is provided, resourceVersionMatch: Unsupported value: "Bogus"',
        id="rvm-every-cause",
    ),
    pytest.param(
        "GET", f"{CMS}?resourceVersion=0&resourceVersionMatch=NotOlderThan&continue=x", None,
        None, 422, "Invalid", "resourceVersionMatch is forbidden when continue is provided",
        id="rvm-with-continue",
    ),
    pytest.param(
        "GET", f"{CMS}?resourceVersion=0&resourceVersionMatch=Exact", None, None, 422, "Invalid",
        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"', id="exact-zero",
    ),
    pytest.param(
        "GET", f"{CMS}?sendInitialEvents=false", None, None, 422, "Invalid",
        LIST_INVALID + "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
        id="send-initial-events-on-list",
    ),
    pytest.param(
        "GET", f"{CMS}?watch=1&resourceVersion=0&resourceVersionMatch=NotOlderThan", None,
        None, 422, "Invalid",
        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        id="watch-rvm-without-send-initial-events",
    ),
    # (The WatchList gate is on, as in kube 1.34+; its off answers: tests/sim/test_watchlist.py.)
    pytest.param(
        "GET", f"{CMS}?watch=1&sendInitialEvents=true", None, None, 422, "Invalid",
        LIST_INVALID + "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
        "resourceVersionMatch to NotOlderThan", id="watch-send-initial-events-without-rvm",
    ),
    pytest.param(
        "GET", f"{CMS}?watch=1&sendInitialEvents=1&resourceVersionMatch=Exact", None, None,
        422, "Invalid", 'resourceVersionMatch: Unsupported value: "Exact": supported values: '
        '"NotOlderThan"', id="watch-rvm-exact",
    ),
    # ---- continue
    pytest.param(
        "GET", f"{CMS}?limit=1&resourceVersion=5&continue={encode_continue(1, 'default', 'a')}",
        None, None, 400, "BadRequest",
        "specifying resource version is not allowed when using continue", id="continue-with-rv",
    ),
    # ---- label selectors (labels.Parse)
    pytest.param(
        "GET", f"{CMS}?labelSelector=a in (web", None, None, 400, "BadRequest",
        "unable to parse requirement: found '', expected: ',' or ')'", id="label-unclosed-set",
    ),
    pytest.param(
        "GET", f"{CMS}?labelSelector=-a", None, None, 400, "BadRequest",
        'unable to parse requirement: <nil>: Invalid value: "-a": name part must consist of '
        "alphanumeric characters", id="label-bad-key",
    ),
    pytest.param(
        "GET", f"{CMS}?labelSelector=a/b/c", None, None, 400, "BadRequest",
        "a qualified name must consist of alphanumeric characters", id="label-key-two-slashes",
    ),
    pytest.param(
        "GET", f"{CMS}?labelSelector=a=-b", None, None, 400, "BadRequest",
        'unable to parse requirement: values[0][a]: Invalid value: "-b": ' + LABEL_VALUE_RULE,
        id="label-bad-value",
    ),
    pytest.param(
        "GET", f"{CMS}?labelSelector=a={'v' * 64}", None, None, 400, "BadRequest",
        "must be no more than 63 characters", id="label-value-too-long",
    ),
    pytest.param(
        "GET", f"{CMS}?labelSelector=a>x", None, None, 400, "BadRequest",
        "for 'Gt', 'Lt' operators, the value must be an integer", id="label-gt-not-integer",
    ),
    pytest.param(
        "GET", f"{CMS}?labelSelector=a,", None, None, 400, "BadRequest",
        "found '', expected: identifier after ','", id="label-trailing-comma",
    ),
    pytest.param(
        "GET", f"{CMS}?labelSelector==x", None, None, 400, "BadRequest",
        "found '=', expected: !, identifier, or 'end of string'", id="label-no-key",
    ),
    pytest.param(
        "GET", f"{CMS}?labelSelector=a=b=c", None, None, 400, "BadRequest",
        "found '=', expected: ',' or 'end of string'", id="label-two-operators",
    ),
    # ---- field selectors (fields.ParseSelector and the kind's field labels)
    pytest.param(
        "GET", f"{CMS}?fieldSelector=a", None, None, 400, "BadRequest",
        "invalid selector: 'a'; can't understand 'a'", id="field-no-operator",
    ),
    pytest.param(
        "GET", f"{CMS}?fieldSelector=spec.nodeName=x", None, None, 400, "BadRequest",
        '"spec.nodeName" is not a known field selector: only "metadata.name", '
        '"metadata.namespace"', id="field-label-default-kind",
    ),
    pytest.param(
        "GET", f"{PODS}?fieldSelector=spec.bogus=x", None, None, 400, "BadRequest",
        "field label not supported: spec.bogus", id="field-label-pods",
    ),
    pytest.param(
        "GET", f"{CMS}?fieldSelector=metadata.name=a=b", None, None, 400, "BadRequest",
        "invalid field selector: unescaped character in value: 61", id="field-unescaped-equals",
    ),
    pytest.param(
        "GET", f"{CMS}?fieldSelector=metadata.name=x%5Cq", None, None, 400, "BadRequest",
        "invalid field selector: invalid escape sequence: \\q", id="field-bad-escape",
    ),
    # ---- the request-deadline filter's timeout (not a watch's)
    pytest.param(
        "GET", f"{CMS}?timeout=abc", None, None, 400, "BadRequest",
        'invalid timeout specified in the request URL - time: invalid duration "abc"',
        id="timeout-not-a-duration",
    ),
    pytest.param(
        "GET", f"{CMS}?timeout=5", None, None, 400, "BadRequest",
        'time: missing unit in duration "5"', id="timeout-no-unit",
    ),
    pytest.param(
        "POST", f"{CMS}?timeout=5y", _cm("t"), JSON, 400, "BadRequest",
        'time: unknown unit "y" in duration "5y"', id="timeout-unknown-unit",
    ),
    # ---- Table options
    pytest.param(
        "GET", f"{CMS}?includeObject=Bogus", None, {"Accept": TABLE}, 400, "BadRequest",
        "Unable to convert to Table as requested: includeObject: Invalid value: \"Bogus\": "
        "must be 'Metadata', 'Object', 'None', or empty", id="table-include-object",
    ),
    # ---- Create/Update/PatchOptions (422 with every cause), then dry runs refused
    pytest.param(
        "POST", f"{CMS}?dryRun=Bogus", _cm("d"), JSON, 422, "Invalid",
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
        '[]string{"Bogus"}: supported values: "All"', id="create-dry-run-bogus",
    ),
    pytest.param(
        "POST", f"{CMS}?fieldValidation=Loose", _cm("f"), JSON, 422, "Invalid",
        'fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", '
        '"Strict", "Warn"', id="create-field-validation-bogus",
    ),
    pytest.param(
        "POST", f"{CMS}?fieldManager={'m' * 129}&dryRun=x", _cm("m"), JSON, 422, "Invalid",
        'CreateOptions.meta.k8s.io "" is invalid: [fieldManager: Too long: may not be more '
        'than 128 bytes, dryRun: Unsupported value: []string{"x"}', id="create-every-cause",
    ),
    pytest.param(
        "POST", f"{CMS}?dryRun=All", _cm("d"), JSON, 400, "BadRequest",
        "dryRun is not supported by the emulator", id="create-dry-run-all-refused",
    ),
    pytest.param(
        "PUT", f"{CMS}/seed?dryRun=", _cm("seed"), JSON, 422, "Invalid",
        'UpdateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{""}',
        id="update-dry-run-empty",
    ),
    pytest.param(
        "PATCH", f"{CMS}/seed?force=true", b'{"data":{"a":"b"}}', MERGE, 422, "Invalid",
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for '
        "non-apply patch", id="patch-force-not-apply",
    ),
    # ---- DeleteOptions: from the query, or the body (never both)
    pytest.param(
        "DELETE", f"{CMS}/seed?propagationPolicy=Bogus", None, None, 422, "Invalid",
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
        '"Bogus": supported values: "Foreground", "Background", "Orphan", "nil"',
        id="delete-policy-bogus",
    ),
    pytest.param(
        "DELETE", f"{CMS}/seed", b'{"propagationPolicy":"Orphan","orphanDependents":true}', JSON,
        422, "Invalid", 'propagationPolicy: Invalid value: "Orphan": orphanDependents and '
        "deletionPropagation cannot be both set", id="delete-policy-and-orphan",
    ),
    pytest.param(
        "DELETE", f"{CMS}/seed?gracePeriodSeconds=soon", None, None, 400, "BadRequest",
        'strconv.ParseInt: parsing "soon": invalid syntax', id="delete-grace-not-a-number",
    ),
    pytest.param(
        "DELETE", f"{CMS}/seed", b'{"dryRun":["Bogus"]}', JSON, 422, "Invalid",
        'dryRun: Unsupported value: []string{"Bogus"}', id="delete-body-dry-run-bogus",
    ),
    pytest.param(
        "DELETE", f"{CMS}?dryRun=All", None, None, 400, "BadRequest",
        "dryRun is not supported by the emulator", id="deletecollection-dry-run-refused",
    ),
    pytest.param(
        "DELETE", f"{CMS}?labelSelector=a in (", None, None, 400, "BadRequest",
        "unable to parse requirement", id="deletecollection-bad-selector",
    ),
    # ---- a create carrying a resourceVersion: kube's storage error, a 500 without a reason
    pytest.param(
        "POST", CMS, _cm("rv", resourceVersion="5"), JSON, 500, "",
        "resourceVersion should not be set on objects to be created", id="create-with-rv",
    ),
    # ---- nesting depth (JSON and YAML, objects and patches)
    pytest.param(
        "POST", NODES, _node_with_deep_spec("deep", 101), JSON, 400, "BadRequest",
        "exceeded max depth of 100", id="json-101-deep",
    ),
    pytest.param(
        "POST", NODES, _node_with_deep_spec("deeper", 2000), JSON, 400, "BadRequest",
        "exceeded max depth of 100", id="json-2000-deep",
    ),
    pytest.param(
        "POST", CMS, _yaml_deep_flow(10_000), {"Content-Type": "application/yaml"}, 400,
        "BadRequest", "exceeded max depth of 100", id="yaml-10000-deep",
    ),
    pytest.param(
        "POST", CMS, b"x:\n" + b"- " * 200 + b"1\n",
        {"Content-Type": "application/yaml"}, 400, "BadRequest", "exceeded max depth of 100",
        id="yaml-block-200-deep",
    ),
    pytest.param(
        "PATCH", f"{CMS}/seed", b'{"data":' + _deep_json(101) + b"}", MERGE, 400, "BadRequest",
        "exceeded max depth of 100", id="merge-patch-deep",
    ),
    pytest.param(
        # Each op fits the bound; the second adds 5 levels under the 100 the first made.
        "PATCH",
        f"{NODES}/sim-node-0",
        b'[{"op":"add","path":"/spec/x","value":'
        + _deep_json(98)
        + b'},{"op":"add","path":"/spec/x'
        + b"/a" * 97
        + b'/b","value":'
        + _deep_json(5)
        + b"}]",
        {"Content-Type": "application/json-patch+json"},
        400,
        "BadRequest",
        "json patch: the result exceeded max depth of 100",
        id="json-patch-result-deep",
    ),
]  # fmt: skip


@pytest.mark.asyncio
@pytest.mark.parametrize(("method", "url", "body", "headers", "code", "reason", "fragment"), BAD)
async def test_sim_bad_request_is_refused_as_kube_refuses_it(
    http: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    method: str,
    url: str,
    body: bytes | None,
    headers: dict[str, str] | None,
    code: int,
    reason: str,
    fragment: str,
) -> None:
    assert (await http.post(CMS, content=_cm("seed"), headers=JSON)).status_code == 201
    with caplog.at_level(logging.WARNING, logger="pycm.sim"):
        r = await http.request(method, url, content=body, headers=headers)
    assert r.status_code == code, r.text[:500]
    status = r.json()
    assert (status["kind"], status["status"], status["code"]) == ("Status", "Failure", code)
    assert status.get("reason", "") == reason, status
    assert fragment in status["message"], status["message"]
    # Refused on purpose, never by a crash: nothing logged (an internal error logs a traceback).
    assert not caplog.records, [rec.getMessage() for rec in caplog.records]


@pytest.mark.asyncio
async def test_sim_create_with_resource_version_is_refused_after_validation(
    http: httpx.AsyncClient,
) -> None:
    """kube checks the sent resourceVersion in storage: an invalid object is a 422 first, and a
    name that exists loses to the resourceVersion (storage refuses before its write)."""
    await http.post(CMS, content=_cm("taken"), headers=JSON)
    r = await http.post(CMS, content=_cm("taken", resourceVersion="7"), headers=JSON)
    assert r.status_code == 500 and "resourceVersion should not be set" in r.json()["message"]
    r = await http.post(CMS, content=_cm("Not_A_Name", resourceVersion="7"), headers=JSON)
    assert r.status_code == 422
    # "0" and one that is no uint64 pass (and are dropped), as kubernetes#113847 shows.
    for i, rv in enumerate(("0", "-1", "x")):
        r = await http.post(CMS, content=_cm(f"ok{i}", resourceVersion=rv), headers=JSON)
        assert r.status_code == 201, r.text
        assert r.json()["metadata"]["resourceVersion"] not in ("0", "-1", "x")


# ---------------------------------------------------------------- still accepted


async def _names(http: httpx.AsyncClient, url: str) -> list[str]:
    r = await http.get(url)
    assert r.status_code == 200, r.text[:300]
    ours = {"none", "empty", "x", "y6"}  # (the fresh cluster may hold configmaps of its own)
    return sorted(n for item in r.json()["items"] if (n := item["metadata"]["name"]) in ours)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("selector", "selected"),
    [
        # kube's own example: "()" is the set of the empty value, so both are valid.
        pytest.param("a notin ()", ["none", "x", "y6"], id="notin-empty-set"),
        pytest.param("a in ()", ["empty"], id="in-empty-set"),
        pytest.param("a in (,x)", ["empty", "x"], id="in-empty-and-x"),
        pytest.param("x in (foo,,baz),a,b notin ()", [], id="kube-doc-example"),
        pytest.param("a>5", ["y6"], id="gt"),
        pytest.param("a<7", ["y6"], id="lt"),
        pytest.param("in in (in)", [], id="keywords-as-key-and-value"),
        pytest.param("!a", ["none"], id="does-not-exist"),
        pytest.param("a , a!=x", ["empty", "y6"], id="spaces-around-comma"),
    ],
)
async def test_sim_label_selectors_kube_accepts_select_as_kube_does(
    http: httpx.AsyncClient, selector: str, selected: list[str]
) -> None:
    for name, labels in (("none", {}), ("empty", {"a": ""}), ("x", {"a": "x"}), ("y6", {"a": "6"})):
        await http.post(CMS, content=_cm(name, labels=labels), headers=JSON)
    assert await _names(http, f"{CMS}?labelSelector={selector}") == selected


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query",
    [
        pytest.param("resourceVersion=0&resourceVersionMatch=NotOlderThan", id="not-older-0"),
        pytest.param("resourceVersion=1&resourceVersionMatch=Exact", id="exact"),
        pytest.param("limit=-1", id="negative-limit-is-no-limit"),
        pytest.param("limit=%2B2", id="signed-limit"),
        pytest.param("limit=0&continue=", id="zero-limit-empty-continue"),
        pytest.param("timeout=30s", id="timeout-seconds"),
        pytest.param("timeout=1m30.5s", id="timeout-compound"),
        pytest.param("timeout=0", id="timeout-zero"),
        pytest.param("timeout=", id="timeout-empty"),
        pytest.param("allowWatchBookmarks=bogus", id="bookmarks-on-a-list-ignored"),
        pytest.param("fieldSelector=metadata.name=a%5C,b", id="field-escaped-comma"),
        pytest.param("fieldSelector=metadata.name!=a,metadata.namespace==default", id="fields"),
        pytest.param("labelSelector=&fieldSelector=", id="empty-selectors"),
        pytest.param("includeObject=Bogus", id="include-object-without-table"),
        pytest.param("watch=false", id="watch-false-is-a-list"),
        pytest.param("watch=0", id="watch-zero-is-a-list"),
    ],
)
async def test_sim_list_options_kube_accepts_are_served(
    http: httpx.AsyncClient, query: str
) -> None:
    r = await http.get(f"{CMS}?{query}")
    assert r.status_code == 200, r.text[:300]
    assert r.json()["kind"] == "ConfigMapList"


async def _watch_lines(http: httpx.AsyncClient, url: str, within: float) -> list[Any]:
    """Every event of a watch that must end by itself within ``within`` seconds."""
    lines = []
    async with asyncio.timeout(within):
        async with http.stream("GET", url) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line:
                    lines.append(orjson.loads(line))
    return lines


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "timeout_seconds",
    [
        pytest.param("-1", id="negative"),
        # 9,223,372,037 s is past int64 nanoseconds: Go's Duration wraps negative.
        pytest.param("9223372037", id="wraps-negative"),
    ],
)
async def test_sim_watch_timeout_kube_ends_at_once_ends_at_once(
    http: httpx.AsyncClient, timeout_seconds: str
) -> None:
    start = time.monotonic()
    await _watch_lines(http, f"{CMS}?watch=true&timeoutSeconds={timeout_seconds}", 2.0)
    assert time.monotonic() - start < 2.0


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "watch", [pytest.param("", id="empty"), pytest.param("yes", id="yes"), pytest.param("T")]
)
async def test_sim_any_watch_value_but_false_or_0_watches(
    http: httpx.AsyncClient, watch: str
) -> None:
    await http.post(CMS, content=_cm("w"), headers=JSON)
    events = await _watch_lines(http, f"{CMS}?watch={watch}&timeoutSeconds=1", 3.0)
    assert ("ADDED", "w") in [(e["type"], e["object"]["metadata"]["name"]) for e in events]


@pytest.mark.asyncio
async def test_sim_delete_options_come_from_the_body_when_there_is_one(
    http: httpx.AsyncClient,
) -> None:
    """kube reads DeleteOptions from the body, or from the query only without one: a bad
    query beside a body is never looked at."""
    await http.post(CMS, content=_cm("gone"), headers=JSON)
    r = await http.request(
        "DELETE", f"{CMS}/gone?propagationPolicy=Bogus", content=b"{}", headers=JSON
    )
    assert r.status_code == 200, r.text
    await http.post(CMS, content=_cm("gone2"), headers=JSON)
    r = await http.delete(f"{CMS}/gone2?propagationPolicy=Foreground&gracePeriodSeconds=0")
    assert r.status_code == 200, r.text


@pytest.mark.asyncio
async def test_sim_nesting_up_to_the_bound_is_stored_and_served(
    http: httpx.AsyncClient, emu: Emulator
) -> None:
    """100 levels (the bound) is stored, and every response that carries it encodes: the
    object, a list, a Table with the object, a watch event."""
    r = await http.post(NODES, content=_node_with_deep_spec("deep", 100), headers=JSON)
    assert r.status_code == 201, r.text[:300]
    assert (await http.get(f"{NODES}/deep")).status_code == 200
    assert (await http.get(NODES)).status_code == 200
    table = await http.get(f"{NODES}?includeObject=Object", headers={"Accept": TABLE})
    assert table.status_code == 200
    events = await _watch_lines(http, f"{NODES}?watch=1&timeoutSeconds=1", 3.0)
    assert "deep" in [e["object"]["metadata"]["name"] for e in events]
    yaml_body = b"apiVersion: v1\nkind: Node\nmetadata: {name: deep-yaml}\nspec: " + (
        b"{a: " * 98 + b"1" + b"}" * 98
    )
    r = await http.post(NODES, content=yaml_body, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text[:300]


@pytest.mark.asyncio
async def test_sim_fault_api_takes_only_the_admin_token() -> None:
    """A token-file user in system:masters is a cluster admin, not the emulator's operator: the
    fault API (docs/sim.md: the admin token only) refuses it with 403."""
    async with run_emulator(tls=False, kubelet=False, nodes=0) as emu:
        emu.authenticator.add("root-token", UserInfo("root", "root", (ADMIN_GROUP,)))
        async with httpx.AsyncClient(base_url=emu.url) as c:
            root = {"Authorization": "Bearer root-token"}
            assert (await c.get(CMS, headers=root)).status_code == 200  # a cluster admin
            r = await c.post("/sim/v1/faults", json={"kind": "compact"}, headers=root)
            assert r.status_code == 403, r.text
            assert r.json()["reason"] == "Forbidden"
            admin = {"Authorization": f"Bearer {emu.admin_token}"}
            r = await c.post("/sim/v1/faults", json={"kind": "compact"}, headers=admin)
            assert r.status_code == 201, r.text


# ---------------------------------------------------------------- never a crash

_QUERY_TEXT = st.text(alphabet="ab=!(),<> \\in0-1.xyz/\x00é", max_size=24)


@settings(max_examples=300, deadline=None)
@given(
    query=st.dictionaries(
        st.sampled_from(
            [
                "labelSelector",
                "fieldSelector",
                "limit",
                "timeoutSeconds",
                "resourceVersion",
                "resourceVersionMatch",
                "continue",
                "sendInitialEvents",
                "allowWatchBookmarks",
            ]
        ),
        _QUERY_TEXT,
    ),
    watch=st.booleans(),
)
def test_sim_list_options_answer_any_query_with_a_status(
    query: dict[str, str], watch: bool
) -> None:
    """Whatever the query, list options are decoded or refused with an APIError (400/422):
    never another exception, which the server would turn into a 500."""
    pods = REGISTRY.get("", "v1", "pods")
    assert pods is not None
    refused: list[int] = []
    try:
        watch_timeout(list_options(query, watch, pods).timeout_seconds)
    except APIError as err:
        refused.append(err.code)
    assert set(refused) <= {400, 422}


@settings(max_examples=200, deadline=None)
@given(
    query=st.dictionaries(
        st.sampled_from(
            [
                "dryRun",
                "fieldValidation",
                "fieldManager",
                "force",
                "propagationPolicy",
                "orphanDependents",
                "gracePeriodSeconds",
            ]
        ),
        _QUERY_TEXT,
    )
)
def test_sim_write_options_answer_any_query_with_a_status(query: dict[str, str]) -> None:
    refused: list[int] = []
    for verb in ("create", "update", "patch"):
        try:
            validate_write_options(query, verb)
        except APIError as err:
            refused.append(err.code)
    try:
        delete_options(None, query)
    except APIError as err:
        refused.append(err.code)
    assert set(refused) <= {400, 422}
