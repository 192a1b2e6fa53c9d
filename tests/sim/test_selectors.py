"""Label and field selectors, table-driven."""

from __future__ import annotations

import pytest

from pycm.sim.errors import APIError
from pycm.sim.selectors import (
    match_label_selector_object,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "front", "example.com/team": "a"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        pytest.param("", True, id="empty"),
        pytest.param("app=web", True, id="eq"),
        pytest.param("app==web", True, id="double-eq"),
        pytest.param("app!=web", False, id="neq"),
        pytest.param("missing!=x", True, id="neq-absent"),
        pytest.param("app in (db, web)", True, id="in"),
        pytest.param("app notin (web)", False, id="notin"),
        pytest.param("missing notin (web)", True, id="notin-absent"),
        pytest.param("tier", True, id="exists"),
        pytest.param("!tier", False, id="not-exists"),
        pytest.param("app=web,tier=back", False, id="and"),
        pytest.param("example.com/team=a,tier in (front)", True, id="prefixed-and-set"),
    ],
)
def test_label_selector(selector: str, matches: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is matches


@pytest.mark.parametrize("bad", ["app in (web", "=x", "a=b=c=", "app in web)"])
def test_label_selector_syntax_errors_are_400(bad: str) -> None:
    with pytest.raises(APIError) as err:
        parse_label_selector(bad)
    assert err.value.code == 400


def test_label_selector_object_expressions() -> None:
    selector = match_label_selector_object(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front"]},
                {"key": "gone", "operator": "DoesNotExist"},
            ],
        }
    )
    assert selector.matches(LABELS)
    assert not selector.matches({"app": "web", "tier": "back"})


def test_field_selector_terms_and_support() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}, "status": {}}
    supported = ("spec.nodeName", "status.phase")
    assert parse_field_selector("spec.nodeName=n1,metadata.name==p", supported, "Pod").matches(pod)
    assert not parse_field_selector("metadata.namespace!=ns", supported, "Pod").matches(pod)
    assert parse_field_selector("status.phase=", supported, "Pod").matches(pod)  # unset is ""
    with pytest.raises(APIError) as err:
        parse_field_selector("spec.other=1", supported, "Pod")
    assert err.value.code == 400


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        # "()" is the set of the empty value (kube's parseValues), not the empty set.
        pytest.param("a notin ()", {"a": ""}, False, id="notin-empty-value"),
        pytest.param("a notin ()", {"a": "x"}, True, id="notin-other-value"),
        pytest.param("a in ()", {"a": ""}, True, id="in-empty-value"),
        pytest.param("a=", {"a": ""}, True, id="equals-nothing"),
        pytest.param("a>5", {"a": "6"}, True, id="gt"),
        pytest.param("a>5", {"a": "x"}, False, id="gt-not-a-number"),
        pytest.param("a<5", {}, False, id="lt-absent"),
    ],
)
def test_label_selector_kube_semantics(
    selector: str, labels: dict[str, str], matches: bool
) -> None:
    assert parse_label_selector(selector).matches(labels) is matches


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        pytest.param("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        pytest.param("a in x", "unable to parse requirement: found 'x' expected: '('"),
        pytest.param("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"),
        pytest.param(
            "a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        ),
        pytest.param("a=b c", "found 'c', expected: ',' or 'end of string'"),
        pytest.param("!", "unable to parse requirement: found '', expected: identifier"),
        pytest.param("a,,b", "found ',', expected: identifier after ','"),
        pytest.param("a in (x,=)", "unable to parse requirement: found '=', expected: ',', or "),
    ],
)
def test_label_selector_errors_are_kubes(bad: str, message: str) -> None:
    with pytest.raises(APIError) as err:
        parse_label_selector(bad)
    assert err.value.message.startswith(message), err.value.message
