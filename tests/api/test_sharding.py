"""Shard selectors: kube's hash, its wire form, and the parse errors kube-apiserver gives."""

from __future__ import annotations

import pytest

from pycm.api.sharding import (
    FIELD_NAMESPACE,
    FIELD_UID,
    HASH_SPACE,
    ShardRange,
    ShardSelector,
    ShardSelectorError,
    fnv1a64,
    hash_field,
    parse,
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # The FNV reference vectors (Go's hash/fnv tests use the same).
        pytest.param(b"", 0xCBF29CE484222325, id="empty"),
        pytest.param(b"a", 0xAF63DC4C8601EC8C, id="a"),
        pytest.param(b"foobar", 0x85944171F73967E8, id="foobar"),
    ],
)
def test_fnv1a64_matches_the_reference_vectors(data: bytes, expected: int) -> None:
    assert fnv1a64(data) == expected


def test_hash_field_hashes_utf8_and_differs_for_different_values() -> None:
    assert hash_field("é") == fnv1a64("é".encode())
    assert hash_field("test") == hash_field("test") != hash_field("different")


def test_selector_wire_form_round_trips_and_joins_ranges_with_or() -> None:
    selector = ShardSelector.of(FIELD_UID, [(0, 1 << 63), ((3 << 62), HASH_SPACE)])
    wire = str(selector)
    assert wire == (
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
        "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
    )
    assert parse(wire) == selector
    # Whitespace is free and double quotes are CEL strings too.
    assert parse(
        'shardRange( object.metadata.uid ,"0x0000000000000000","0x8000000000000000")'
    ) == ShardSelector.of(FIELD_UID, [(0, 1 << 63)])


def test_selector_matches_by_the_hash_of_uid_or_namespace() -> None:
    obj = {"metadata": {"uid": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "namespace": "team-a"}}
    uid_hash = hash_field("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee")
    assert ShardSelector.of(FIELD_UID, [(uid_hash, uid_hash + 1)]).matches(obj)
    assert not ShardSelector.of(FIELD_UID, [(uid_hash + 1, HASH_SPACE)]).matches(obj)
    ns_hash = hash_field("team-a")
    assert ShardSelector.of(FIELD_NAMESPACE, [(0, ns_hash + 1)]).matches(obj)
    assert not ShardSelector.of(FIELD_NAMESPACE, [(0, ns_hash)]).matches(obj)
    # A cluster-scoped object's namespace is "": its hash is FNV-1a's offset basis.
    node = {"metadata": {"name": "n1"}}
    assert ShardSelector.of(FIELD_NAMESPACE, [(0xCBF29CE484222325, HASH_SPACE)]).matches(node)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        pytest.param("", "empty shard selector is not allowed", id="empty"),
        pytest.param(
            "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
            'unsupported field path "object.metadata.name"',
            id="field",
        ),
        pytest.param(
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
            '(did you mean "0x0000000000000000"?)',
            id="short-hex",
        ),
        pytest.param(
            "shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')",
            "hexStart must have '0x' prefix",
            id="no-prefix",
        ),
        pytest.param(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x1000000000000000f')",
            "hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64)",
            id="past-the-space",
        ),
        pytest.param(
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
            "shard range start 0x8000000000000000 must be less than end 0x8000000000000000",
            id="empty-range",
        ),
        pytest.param(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0xG000000000000000')",
            'hexEnd: invalid hex character "G"',
            id="bad-hex",
        ),
        pytest.param(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
            "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
            'all shard ranges must use the same field, got "object.metadata.uid" and '
            '"object.metadata.namespace"',
            id="mixed-fields",
        ),
        pytest.param(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && "
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
            "token recognition error",
            id="and",
        ),
        pytest.param(
            "size(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            'unsupported function "size"; only shardRange() and || are allowed',
            id="function",
        ),
        pytest.param(
            "shardRange(object.metadata.uid, '0x0000000000000000')",
            "shardRange() requires exactly 3 arguments",
            id="arity",
        ),
    ],
)
def test_parse_refuses_what_kube_apiserver_refuses_with_its_words(expr: str, message: str) -> None:
    with pytest.raises(ShardSelectorError) as caught:
        parse(expr)
    assert message in str(caught.value)


def test_ranges_are_checked_when_built_in_code_too() -> None:
    with pytest.raises(ShardSelectorError, match="must be less than end"):
        ShardRange(FIELD_UID, 5, 5)
    with pytest.raises(ShardSelectorError, match="empty shard selector"):
        ShardSelector(())
