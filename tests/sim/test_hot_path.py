"""The request path's shortcuts give what the longer ways they replace gave.

Each shortcut (pycm/sim: request_path, the negotiation cache, new_uid, rfc3339's per-second
cache, the shape check's fast walk) is checked against the computation it stands for, on
generated inputs as well as on the awkward ones by hand.
"""

from __future__ import annotations

import datetime as dt
import string
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request

from pycm.sim import shape
from pycm.sim.errors import APIError
from pycm.sim.negotiation import JSON, METADATA, TABLE, negotiate
from pycm.sim.objects import new_uid, rfc3339
from pycm.sim.requestinfo import request_path


def _scope(path: str, host: bytes = b"127.0.0.1:6443") -> dict[str, Any]:
    return {
        "type": "http",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "query_string": b"",
        "headers": [(b"host", host)],
        "server": ("127.0.0.1", 6443),
    }


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/api/v1/namespaces/default/pods/a", id="plain"),
        pytest.param("/api/v1/namespaces/default/pods/a?b", id="question-mark"),
        pytest.param("/api/v1/pods/a#b", id="hash"),
        pytest.param("/api/v1/pods/a\\b", id="backslash"),
        pytest.param("/api/v1/pods/a\tb\r\nc", id="tab-and-line-ends"),
        pytest.param("//api/v1/pods", id="double-slash"),
        pytest.param("/api/v1/pods/%2F", id="percent"),
        pytest.param("/api/v1/pods/é ü", id="non-ascii-and-space"),
        pytest.param("/", id="root"),
    ],
)
def test_request_path_is_starlettes_url_path(path: str) -> None:
    scope = _scope(path)
    assert request_path(scope) == Request(scope).url.path


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.printable + "é/?#\\%\x00\x7f", max_size=40))
def test_request_path_is_starlettes_url_path_for_any_text(tail: str) -> None:
    scope = _scope("/" + tail)
    assert request_path(scope) == Request(scope).url.path


@pytest.mark.parametrize(
    ("accept", "mode", "api_version"),
    [
        pytest.param(None, JSON, "meta.k8s.io/v1", id="none"),
        pytest.param("application/json", JSON, "meta.k8s.io/v1", id="json"),
        pytest.param(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            TABLE,
            "meta.k8s.io/v1",
            id="kubectl-table",
        ),
        pytest.param(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1",
            METADATA,
            "meta.k8s.io/v1beta1",
            id="metadata-v1beta1",
        ),
    ],
)
def test_negotiate_answers_the_same_each_time_a_header_repeats(
    accept: str | None, mode: str, api_version: str
) -> None:
    for _ in range(3):  # the first answer is computed, the next ones come from the cache
        out = negotiate(accept)
        assert (out.mode, out.api_version) == (mode, api_version)


def test_negotiate_refuses_an_unacceptable_header_every_time() -> None:
    for _ in range(2):  # a refusal is not cached as an answer
        with pytest.raises(APIError) as caught:
            negotiate("application/vnd.kubernetes.protobuf")
        assert caught.value.code == 406


def test_new_uid_is_a_random_version_4_uuid_as_uuid4_writes_it() -> None:
    uids = {new_uid() for _ in range(2000)}
    assert len(uids) == 2000
    for uid in uids:
        parsed = uuid.UUID(uid)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == uid


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=4_102_444_800 * 10**9))
def test_rfc3339_is_the_utc_second_whatever_the_nanoseconds(wall_ns: int) -> None:
    moment = dt.datetime.fromtimestamp(wall_ns // 10**9, tz=dt.UTC)
    assert rfc3339(wall_ns) == moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert rfc3339(wall_ns - wall_ns % 10**9) == rfc3339(wall_ns)  # cached by the second


# JSON-ish values, the kinds of thing a body's fields hold.
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["a", "", "1"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["name", "image", "ports", "x"]), inner, max_size=3)
    ),
    max_leaves=12,
)
_pod_fields = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "name": _json,
                "labels": _json,
                "ownerReferences": st.lists(
                    st.dictionaries(st.sampled_from(["uid", "controller"]), _json), max_size=2
                ),
            },
        )
        | _json,
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "containers": st.lists(
                    st.dictionaries(
                        st.sampled_from(["name", "image", "ports", "resources", "x"]), _json
                    ),
                    max_size=2,
                )
                | _json,
                "nodeName": _json,
                "terminationGracePeriodSeconds": _json,
            },
        )
        | _json,
        "status": _json,
    },
)


@settings(max_examples=500, deadline=None)
@given(_pod_fields, st.sampled_from(["Pod", "Deployment", "ConfigMap", "Unknown"]))
def test_shape_fast_walk_agrees_with_the_full_check(obj: dict[str, Any], kind: str) -> None:
    schema = shape._SCHEMAS.get(kind) or {"metadata": shape._META}
    assert shape._fits(obj, schema) == (shape._mismatch(obj, schema, "", kind, "") is None)


def test_check_shape_names_the_first_bad_field_in_schema_order() -> None:
    # Two bad fields: the message names the one the schema lists first, as before the fast walk.
    bad = {"spec": {"nodeName": 1, "containers": "x"}, "metadata": {"name": 2}}
    with pytest.raises(APIError) as caught:
        shape.check_shape("Pod", bad)
    assert caught.value.message.endswith(
        "cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"
    )
