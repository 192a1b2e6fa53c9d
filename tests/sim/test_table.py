"""A kind's table: pages in key order within a namespace, by a slice when nothing selects and by
testing each object otherwise — the same pages either way."""

from __future__ import annotations

import pytest

from pycm.sim.selectors import FieldSelector, LabelSelector, parse_label_selector
from pycm.sim.table import Key, Table

EVERYTHING = parse_label_selector("app")  # every object below has the label: it tests each one


def _table() -> Table:
    table = Table()
    for ns in ("a", "b", "bb", "c"):
        for name in ("x", "y", "z"):
            table.put((ns, name), {"metadata": {"name": name, "labels": {"app": ns}}})
    return table


def _keys(
    table: Table,
    namespace: str | None,
    labels: LabelSelector,
    after: Key | None = None,
    limit: int | None = None,
) -> list[Key]:
    pairs = table.select(namespace, labels, FieldSelector(), after=after, limit=limit)
    return [key for key, _ in pairs]


@pytest.mark.parametrize(
    ("namespace", "after", "limit", "expected"),
    [
        pytest.param("b", None, None, [("b", "x"), ("b", "y"), ("b", "z")], id="namespace"),
        pytest.param("b", ("b", "x"), None, [("b", "y"), ("b", "z")], id="after"),
        pytest.param("b", None, 1, [("b", "x"), ("b", "y")], id="limit-plus-one"),
        pytest.param("b", ("b", "y"), 5, [("b", "z")], id="last-page"),
        pytest.param("b", ("b", "z"), 5, [], id="past-the-end"),
        pytest.param("bb", None, 2, [("bb", "x"), ("bb", "y"), ("bb", "z")], id="prefix-ns"),
        pytest.param("nope", None, None, [], id="no-such-namespace"),
        pytest.param(None, ("b", "z"), 2, [("bb", "x"), ("bb", "y"), ("bb", "z")], id="all-ns"),
        pytest.param("", ("c", "y"), None, [("c", "z")], id="empty-ns-is-all"),
    ],
)
def test_select_pages_alike_with_and_without_a_selector(
    namespace: str | None, after: Key | None, limit: int | None, expected: list[Key]
) -> None:
    table = _table()
    plain = _keys(table, namespace, LabelSelector(), after=after, limit=limit)
    tested = _keys(table, namespace, EVERYTHING, after=after, limit=limit)
    assert plain == tested == expected


def test_select_returns_the_stored_objects_and_skips_the_unmatched() -> None:
    table = _table()
    pairs = table.select("c", LabelSelector(), FieldSelector())
    assert [obj is table.get(key) for key, obj in pairs] == [True, True, True]
    assert _keys(table, None, parse_label_selector("app=bb")) == [("bb", n) for n in "xyz"]
