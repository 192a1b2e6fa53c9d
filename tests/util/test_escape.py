"""escape_control: every control character a client could smuggle into a log line is visible."""

from __future__ import annotations

import pytest

from pycm.util.escape import escape_control


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("/metrics", "/metrics", id="plain-unchanged"),
        pytest.param("a\nb", "a\\nb", id="LF"),
        pytest.param("a\rb", "a\\rb", id="CR"),
        pytest.param("a\tb", "a\\tb", id="TAB"),
        pytest.param("a\x00b", "a\\x00b", id="NUL"),
        pytest.param("\x1b[31mred", "\\x1b[31mred", id="ANSI-ESC"),
        pytest.param("\x7f", "\\x7f", id="DEL"),
        pytest.param("\x85\x9b", "\\x85\\x9b", id="C1-NEL-CSI"),
        pytest.param("a\u2028b\u2029", "a\\u2028b\\u2029", id="unicode-separators"),
        pytest.param("ünïcødé €", "ünïcødé €", id="printable-unicode-kept"),
        pytest.param("back\\slash", "back\\slash", id="backslash-kept"),
    ],
)
def test_escape_control_table(text: str, expected: str) -> None:
    assert escape_control(text) == expected


def test_escape_control_every_control_character_escaped_and_idempotent() -> None:
    controls = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]))
    once = escape_control(controls)
    assert once.isprintable()
    assert escape_control(once) == once
