"""Label selector parsing (string and dict forms), validation and matching."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.api.labels import (
    EVERYTHING,
    NOTHING,
    Operator,
    SelectorError,
    parse,
    selector_from_dict,
    selector_from_set,
)

LABELS = {"a": "b", "c": "x", "e": "x", "f": "y", "g": "", "n": "5"}


@pytest.mark.parametrize(
    ("text", "labels", "want"),
    [
        pytest.param("a=b", LABELS, True, id="equals-match"),
        pytest.param("a==b", LABELS, True, id="double-equals-match"),
        pytest.param("a=c", LABELS, False, id="equals-mismatch"),
        pytest.param("a=b", {}, False, id="equals-missing-key"),
        pytest.param("c!=d", LABELS, True, id="not-equals-different"),
        pytest.param("c!=x", LABELS, False, id="not-equals-same"),
        pytest.param("z!=x", LABELS, True, id="not-equals-missing-key-matches"),
        pytest.param("e in (x,y)", LABELS, True, id="in-match"),
        pytest.param("e in (y,z)", LABELS, False, id="in-mismatch"),
        pytest.param("z in (x)", LABELS, False, id="in-missing-key"),
        pytest.param("f notin (z)", LABELS, True, id="notin-match"),
        pytest.param("f notin (y)", LABELS, False, id="notin-mismatch"),
        pytest.param("z notin (y)", LABELS, True, id="notin-missing-key-matches"),
        pytest.param("g", LABELS, True, id="exists-empty-value"),
        pytest.param("z", LABELS, False, id="exists-missing"),
        pytest.param("!h", LABELS, True, id="does-not-exist-absent"),
        pytest.param("!a", LABELS, False, id="does-not-exist-present"),
        pytest.param("n>4", LABELS, True, id="gt-match"),
        pytest.param("n>5", LABELS, False, id="gt-equal-mismatch"),
        pytest.param("n<6", LABELS, True, id="lt-match"),
        pytest.param("a<6", LABELS, False, id="lt-non-integer-label"),
        pytest.param("g=", LABELS, True, id="equals-empty-value"),
        pytest.param("a=b,c!=d,e in (x,y),f notin (z),g,!h", LABELS, True, id="all-operators"),
        pytest.param("a=b,c=nope", LABELS, False, id="conjunction-one-fails"),
        pytest.param("  a = b ,  e in ( x , y )  ", LABELS, True, id="whitespace-ignored"),
        pytest.param("example.com/app=web", {"example.com/app": "web"}, True, id="prefixed-key"),
        pytest.param("", {}, True, id="empty-matches-everything"),
    ],
)
def test_parse_selector_matches_labels_as_apimachinery(
    text: str, labels: dict[str, str], want: bool
) -> None:
    assert parse(text).matches(labels) is want


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("a=b c", "expected: ',' or end of string", id="missing-comma"),
        pytest.param("a in x", "expected: '('", id="in-without-parens"),
        pytest.param("a in ()", "values set can't be empty", id="in-empty-set"),
        pytest.param("a in (x", "expected: ',', ')' or a value", id="unclosed-parens"),
        pytest.param("a=b,", "identifier after ','", id="trailing-comma"),
        pytest.param(",a", "expected: identifier", id="leading-comma"),
        pytest.param("!a=b", "after '!a'", id="negated-with-operator"),
        pytest.param("a~b", "name part must consist", id="tilde-in-key"),
        pytest.param("a=(", "expected: a value", id="symbol-as-value"),
        pytest.param("-a=b", "name part must consist", id="key-starts-with-dash"),
        pytest.param("a=-b", "invalid label value", id="value-starts-with-dash"),
        pytest.param("a=" + "x" * 64, "no more than 63", id="value-too-long"),
        pytest.param("Bad_Prefix/a=b", "DNS-1123 subdomain", id="uppercase-prefix"),
        pytest.param("n>x", "must be an integer", id="gt-non-integer"),
        pytest.param("/a", "prefix part must be non-empty", id="empty-prefix"),
    ],
)
def test_parse_invalid_selector_raises_clear_error(text: str, fragment: str) -> None:
    with pytest.raises(SelectorError) as info:
        parse(text)
    assert fragment in str(info.value)


def test_parse_unknown_operator_token_names_the_expected_operators() -> None:
    with pytest.raises(SelectorError, match="expected one of: '=', '!=', '=='"):
        parse("a ~ b")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("b=2,a=1", "a=1,b=2", id="sorted-by-key"),
        pytest.param("e in (y,x)", "e in (x,y)", id="values-sorted"),
        pytest.param("f notin (z),!h,g", "f notin (z),g,!h", id="notin-exists-dne"),
        pytest.param("a==b,c!=d", "a==b,c!=d", id="equality-operators"),
        pytest.param("n>4,m<2", "m<2,n>4", id="gt-lt"),
        pytest.param("", "", id="empty"),
    ],
)
def test_selector_to_string_round_trips(text: str, want: str) -> None:
    sel = parse(text)
    assert sel.to_string() == want
    assert parse(sel.to_string()) == sel


@pytest.mark.parametrize(
    ("d", "labels", "want"),
    [
        pytest.param({"matchLabels": {"app": "web"}}, {"app": "web"}, True, id="match-labels"),
        pytest.param({"matchLabels": {"app": "web"}}, {"app": "db"}, False, id="labels-mismatch"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            {"tier": "b"},
            True,
            id="expr-in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]},
            {"tier": "a"},
            False,
            id="expr-notin",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            {"tier": ""},
            True,
            id="expr-exists",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
            {"tier": ""},
            False,
            id="expr-does-not-exist",
        ),
        pytest.param(
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}],
            },
            {"app": "web", "tier": "be"},
            False,
            id="labels-and-expressions-conjunction",
        ),
        pytest.param({}, {"any": "thing"}, True, id="empty-dict-matches-everything"),
        pytest.param(None, {}, False, id="nil-matches-nothing"),
        pytest.param(None, {"any": "thing"}, False, id="nil-matches-nothing-labelled"),
    ],
)
def test_selector_from_dict_matches_as_label_selector_as_selector(
    d: dict[str, Any] | None, labels: dict[str, str], want: bool
) -> None:
    assert selector_from_dict(d).matches(labels) is want


@pytest.mark.parametrize(
    ("d", "fragment"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            "'Gt' is not a valid label selector operator",
            id="gt-not-allowed-in-dict",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "values set can't be empty",
            id="in-without-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "values set must be empty",
            id="exists-with-values",
        ),
        pytest.param({"matchLabels": {"a": 1}}, "must be a string", id="non-string-value"),
        pytest.param({"matchLabels": {"a b": "c"}}, "invalid label key", id="bad-key"),
        pytest.param(
            {"matchExpressions": {"key": "a"}}, "must be a list", id="expressions-not-list"
        ),
    ],
)
def test_selector_from_dict_invalid_raises_clear_error(d: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SelectorError) as info:
        selector_from_dict(d)
    assert fragment in str(info.value)


def test_selector_empty_and_nothing_flags_differ() -> None:
    assert EVERYTHING.empty
    assert not NOTHING.empty
    assert selector_from_dict({}) == EVERYTHING
    assert selector_from_dict(None) == NOTHING
    assert not parse("a").empty


def test_selector_from_set_builds_equality_requirements() -> None:
    sel = selector_from_set({"b": "2", "a": "1"})
    assert [(r.key, r.operator) for r in sel.requirements] == [
        ("a", Operator.EQUALS),
        ("b", Operator.EQUALS),
    ]
    assert sel.matches({"a": "1", "b": "2", "c": "3"})
    assert not sel.matches({"a": "1"})
