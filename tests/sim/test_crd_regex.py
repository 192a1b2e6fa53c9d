"""The linear-time pattern matcher: RE2's syntax and Go's refusals, and no backtracking."""

from __future__ import annotations

import time

import pytest

from pycm.sim.crd.regex import RegexError, compile_regex


@pytest.mark.parametrize(
    ("pattern", "text", "want"),
    [
        pytest.param("^[a-z]+$", "abc", True, id="class"),
        pytest.param("^[a-z]+$", "aBc", False, id="class-miss"),
        pytest.param("(?i)^[a-z]+$", "aBc", True, id="flag-i"),
        pytest.param("b", "abc", True, id="unanchored"),
        pytest.param("^b", "abc", False, id="anchored"),
        pytest.param(r"^\d{3}-\d{4}$", "555-1234", True, id="counted"),
        pytest.param(r"^\d{3}-\d{4}$", "555-12345", False, id="counted-miss"),
        pytest.param("^(ab)*$", "ababab", True, id="group-star"),
        pytest.param("^(ab)*$", "ababa", False, id="group-star-miss"),
        pytest.param(r"\bfoo\b", "a foo b", True, id="word-boundary"),
        pytest.param(r"\bfoo\b", "afoob", False, id="word-boundary-miss"),
        pytest.param("^[[:alpha:]]+$", "abZ", True, id="posix-class"),
        pytest.param(r"^\p{Lu}", "Ab", True, id="unicode-category"),
        pytest.param("a.c", "a\nc", False, id="dot-not-newline"),
        pytest.param("(?s)a.c", "a\nc", True, id="flag-s"),
        pytest.param("^[^a-c]$", "b", False, id="negated-class"),
        pytest.param("^a{2,3}$", "aaaa", False, id="bounded-repeat"),
        pytest.param("^$", "", True, id="empty"),
        pytest.param(r"^\.$", ".", True, id="escaped-dot"),
        pytest.param("^(?:x|yz)+?$", "yzx", True, id="lazy-non-capturing"),
        pytest.param("(?m)^b$", "a\nb\nc", True, id="flag-m"),
        pytest.param(r"^[\w.-]+@[\w-]+\.\w+$", "me.x@ex-a.org", True, id="email-like"),
    ],
)
def test_regex_matches_as_go_does(pattern: str, text: str, want: bool) -> None:
    assert compile_regex(pattern).search(text) is want


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        pytest.param("(a", "error parsing regexp: missing closing ): `(a`", id="open-group"),
        pytest.param("a)", "error parsing regexp: unexpected ): `a)`", id="close-group"),
        pytest.param("[a", "error parsing regexp: missing closing ]: `[a`", id="open-class"),
        pytest.param(
            "a**", "error parsing regexp: invalid nested repetition operator: `**`", id="nested-rep"
        ),
        pytest.param(
            "*a", "error parsing regexp: missing argument to repetition operator: `*`", id="no-arg"
        ),
        pytest.param(
            r"(a)\1", r"error parsing regexp: invalid escape sequence: `\1`", id="backreference"
        ),
        pytest.param(
            "(?=a)",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?=`",
            id="lookahead",
        ),
        pytest.param(
            "a{1001}", "error parsing regexp: invalid repeat count: `{1001}`", id="repeat-count"
        ),
        pytest.param(
            "[z-a]", "error parsing regexp: invalid character class range: `z-a`", id="range"
        ),
    ],
)
def test_regex_refuses_what_go_refuses(pattern: str, message: str) -> None:
    with pytest.raises(RegexError) as info:
        compile_regex(pattern)
    assert str(info.value) == message


def test_regex_program_size_is_bounded() -> None:
    with pytest.raises(RegexError, match="expression too large"):
        compile_regex("(((a{100}){100}){100})")


@pytest.mark.parametrize(
    "pattern", ["^(a+)+$", "^(a|aa)*c$", "^(a*)*b$", "[a-z]*[a-z]*[a-z]*[a-z]*x"]
)
def test_regex_catastrophic_patterns_run_in_linear_time(pattern: str) -> None:
    started = time.perf_counter()
    assert compile_regex(pattern).search("a" * 50_000 + "!") is False
    assert time.perf_counter() - started < 5  # Python's re: hours for the first one
