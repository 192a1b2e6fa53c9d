"""The emulator's shardSelector parser and matcher (KEP-5866): kube-apiserver's answers, and the
same answers as the manager's own (``pycm.api.sharding``) on random selectors and objects."""

from __future__ import annotations

import itertools
import random
import uuid

import pytest

from pycm.api import sharding
from pycm.sim.errors import APIError
from pycm.sim.shardselector import ShardSelector, fnv1a_64, parse_shard_selector

UID = "object.metadata.uid"
NS = "object.metadata.namespace"
HALF = "0x8000000000000000"
ZERO = "0x0000000000000000"
END = "0x10000000000000000"


def _range(field: str, start: str, end: str) -> str:
    return f"shardRange({field}, '{start}', '{end}')"


def _refusal(text: str) -> str:
    with pytest.raises(APIError) as caught:
        parse_shard_selector(text)
    assert caught.value.code == 400
    status = caught.value.status()
    assert status["reason"] == "BadRequest"
    message = str(status["message"])
    assert message.startswith("invalid shard selector: ")
    return message.removeprefix("invalid shard selector: ")


def test_fnv1a_64_is_gos_fnv_new64a() -> None:
    # The published FNV-1a 64 test vectors (offset basis for "", and "a", "foobar").
    assert fnv1a_64("") == 0xCBF29CE484222325
    assert fnv1a_64("a") == 0xAF63DC4C8601EC8C
    assert fnv1a_64("foobar") == 0x85944171F73967E8


@pytest.mark.parametrize(
    ("text", "key", "ranges"),
    [
        pytest.param(_range(UID, ZERO, HALF), "uid", ((0, 1 << 63),), id="one-range"),
        pytest.param(_range(UID, ZERO, END), "uid", ((0, 1 << 64),), id="whole-space"),
        pytest.param(
            _range(NS, "0x00000000000000aa", "0x00000000000000ff"),
            "namespace",
            ((0xAA, 0xFF),),
            id="namespace",
        ),
        pytest.param(
            f"{_range(UID, ZERO, HALF)} || {_range(UID, HALF, END)}",
            "uid",
            ((0, 1 << 63), (1 << 63, 1 << 64)),
            id="two-ranges",
        ),
        pytest.param(
            f"shardRange({UID},'{ZERO}','{HALF}')", "uid", ((0, 1 << 63),), id="no-spaces"
        ),
        pytest.param(
            f"  shardRange( {UID} ,  '{ZERO}' ,  '{HALF}' )  ",
            "uid",
            ((0, 1 << 63),),
            id="extra-whitespace",
        ),
        pytest.param(
            f'({_range(UID, ZERO, HALF)}) || shardRange({UID}, "{HALF}", "{END}")',
            "uid",
            ((0, 1 << 63), (1 << 63, 1 << 64)),
            id="cel-parentheses-and-double-quotes",
        ),
    ],
)
def test_shard_selector_valid_parses_to_ranges(
    text: str, key: str, ranges: tuple[tuple[int, int], ...]
) -> None:
    selector = parse_shard_selector(text)
    assert (selector.key, selector.ranges, selector.text) == (key, ranges, text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param(
            "   ",
            "empty shard selector is not allowed; omit the parameter for unfiltered lists",
            id="blank",
        ),
        pytest.param(
            _range(UID, "0000000000000000", HALF),
            "hexStart must have '0x' prefix, got \"0000000000000000\"",
            id="no-0x",
        ),
        pytest.param(
            _range(UID, "0x", HALF), "hexStart: hex value is required after '0x'", id="bare-0x"
        ),
        pytest.param(
            _range(UID, ZERO, "0xff"),
            'hexEnd must be a 0x-prefixed 16-digit hex value, got "0xff" '
            '(did you mean "0x00000000000000ff"?)',
            id="short-hex",
        ),
        pytest.param(
            _range(UID, "0x000000000000000000", HALF),
            'hexStart: hex value too long (18 chars, max 17): "000000000000000000"',
            id="too-long",
        ),
        pytest.param(
            _range(UID, "0x0g", HALF),
            'hexStart: invalid hex character "g" in "0x0g"',
            id="bad-digit",
        ),
        pytest.param(
            _range(UID, ZERO, "0x20000000000000000"),
            "hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64), got "
            '"0x20000000000000000"',
            id="past-the-space",
        ),
        pytest.param(
            _range(UID, HALF, HALF),
            f"shard range start {HALF} must be less than end {HALF}",
            id="empty-range",
        ),
        pytest.param(
            _range("object.metadata.name", ZERO, HALF),
            'unsupported field path "object.metadata.name"; supported: object.metadata.uid, '
            "object.metadata.namespace",
            id="name-field",
        ),
        pytest.param(
            f"{_range(UID, ZERO, HALF)} || {_range(NS, HALF, END)}",
            f'all shard ranges must use the same field, got "{UID}" and "{NS}"',
            id="mixed-fields",
        ),
        pytest.param(
            f"invalidFunc({UID}, '{ZERO}', '{HALF}')",
            'unsupported function "invalidFunc"; only shardRange() and || are allowed',
            id="other-function",
        ),
        pytest.param(
            f"{_range(UID, ZERO, HALF)} && {_range(UID, HALF, END)}",
            'unsupported function "_&&_"; only shardRange() and || are allowed',
            id="and-operator",
        ),
        pytest.param(
            f"{UID} > '0x0'",
            'unsupported function "_>_"; only shardRange() and || are allowed',
            id="comparison",
        ),
        pytest.param(
            f"shardRange({UID}, '{ZERO}')",
            "shardRange() requires exactly 3 arguments, got 2",
            id="two-arguments",
        ),
        pytest.param(
            f"shardRange({UID}, 0, 8)", "hexStart must be a string literal, got int64", id="ints"
        ),
        pytest.param(
            f"shardRange({UID}, hex(0), '{HALF}')",
            "hexStart must be a string literal (e.g. '0xff'), got expression kind 1",
            id="call-argument",
        ),
        pytest.param(
            f"shardRange('x', '{ZERO}', '{HALF}')",
            "shardRange() first argument: expected field path (e.g. object.metadata.uid), got "
            "expression kind 5",
            id="literal-field",
        ),
        pytest.param(
            UID,
            "unexpected expression kind 7; expected shardRange() call or || operator",
            id="bare-field",
        ),
        pytest.param(
            f"{_range(UID, ZERO, HALF)} #",
            "CEL parse error: Syntax error: token recognition error at: '#'",
            id="not-cel",
        ),
        pytest.param(
            f"{_range(UID, ZERO, HALF)} )",
            "CEL parse error: Syntax error: extraneous input ')' expecting <EOF>",
            id="trailing-token",
        ),
        pytest.param(
            "(" * 300 + _range(UID, ZERO, HALF) + ")" * 300,
            "CEL parse error: expression recursion limit exceeded: 250",
            id="too-deep",
        ),
    ],
)
def test_shard_selector_invalid_is_400_with_kubes_reason(text: str, reason: str) -> None:
    assert _refusal(text) == reason


def test_shard_selector_long_or_chain_parses_without_recursion() -> None:
    step = (1 << 64) // 4000
    spans = [(i * step, (i + 1) * step) for i in range(4000)]
    text = " || ".join(_range(UID, f"0x{a:016x}", f"0x{b:016x}") for a, b in spans)
    assert parse_shard_selector(text).ranges == tuple(spans)


def test_shard_selector_matches_on_the_hash_of_uid_or_namespace() -> None:
    uid = "7c1f1d0e-0000-4000-8000-000000000001"
    h = fnv1a_64(uid)
    exact = ShardSelector("", "uid", ((h, h + 1),))
    assert exact.matches({"metadata": {"uid": uid}})
    assert not ShardSelector("", "uid", ((h + 1, 1 << 64),)).matches({"metadata": {"uid": uid}})
    # A cluster-scoped object's namespace is "": its hash is the offset basis.
    basis = fnv1a_64("")
    by_namespace = ShardSelector("", "namespace", ((basis, basis + 1),))
    assert by_namespace.matches({"metadata": {"name": "node-1"}})
    assert not by_namespace.matches({"metadata": {"namespace": "default"}})


def _random_selector(rng: random.Random) -> tuple[str, str, list[tuple[int, int]]]:
    field = rng.choice([UID, NS])
    cuts = sorted(rng.sample(range(1, 1 << 16), rng.randint(2, 8)))
    bounds = [0, *(c << 48 for c in cuts), 1 << 64]
    pairs = list(itertools.pairwise(bounds))
    spans = rng.sample(pairs, rng.randint(1, min(4, len(pairs))))
    quote = rng.choice(["'", '"'])
    space = rng.choice(["", " ", "  "])
    parts = []
    for start, end in spans:
        hi = "0x10000000000000000" if end == 1 << 64 else f"0x{end:016x}"
        parts.append(
            f"shardRange({space}{field}{space},{space}{quote}0x{start:016x}{quote},"
            f"{space}{quote}{hi}{quote}{space})"
        )
    return field, rng.choice([" || ", "||", "  ||  "]).join(parts), spans


def _random_object(rng: random.Random) -> dict[str, object]:
    meta: dict[str, object] = {"uid": str(uuid.UUID(int=rng.getrandbits(128)))}
    if rng.random() < 0.8:  # the rest are cluster-scoped: namespace ""
        meta["namespace"] = rng.choice(["default", "kube-system", "team-a", "ns-é", "x" * 63])
    return {"metadata": meta}


def test_shard_selector_agrees_with_the_managers_on_random_selectors_and_objects() -> None:
    rng = random.Random(5866)
    objects = [_random_object(rng) for _ in range(200)]
    for _ in range(300):
        _, text, spans = _random_selector(rng)
        ours = parse_shard_selector(text)
        theirs = sharding.parse(text)
        assert ours.ranges == tuple(spans)
        assert ours.ranges == tuple((r.start, r.end) for r in theirs.ranges)
        # The manager's wire form (what its informers send) means the same to the emulator.
        assert parse_shard_selector(str(theirs)).ranges == ours.ranges
        for obj in objects:
            assert ours.matches(obj) == theirs.matches(obj), (text, obj)


def test_shard_selector_agrees_with_the_managers_on_corrupted_bounds() -> None:
    """One bound spoiled (a digit swapped for another character, dropped or doubled): both
    refuse, in kube's words, or both accept the same ranges."""
    rng = random.Random(36)
    for _ in range(300):
        _, text, _ = _random_selector(rng)
        starts = [i for i in range(len(text)) if text.startswith("0x", i)]
        at = rng.choice(starts) + 2 + rng.randrange(16)
        spoil = rng.choice(
            [
                text[:at] + rng.choice("gGzZ-x 0f9A") + text[at + 1 :],
                text[:at] + text[at + 1 :],
                text[:at] + text[at] + text[at:],
            ]
        )
        try:
            theirs: object = ("ok", tuple((r.start, r.end) for r in sharding.parse(spoil).ranges))
        except sharding.ShardSelectorError as err:
            theirs = ("refused", str(err))
        try:
            ours: object = ("ok", parse_shard_selector(spoil).ranges)
        except APIError:
            ours = ("refused", _refusal(spoil))
        assert ours == theirs, spoil


def test_shard_selector_any_text_is_an_answer_never_a_crash() -> None:
    """Random text from CEL's alphabet: parsed, or refused with a 400 — never another error."""
    rng = random.Random(400)
    pieces = [
        "shardRange(", UID, NS, ", ", "'0x0000000000000000'", "'0x10000000000000000'", ")",
        "(", "||", "&&", "!", "-", "1", "1u", "2.5", "b'x'", "r'\\q'", "'\\x4", "[", "]", "{",
        "}", ":", "?", ".", "in", "true", "null", "'", '"', "\\", "é", " ", "#", "\x00",
    ]  # fmt: skip
    codes = []
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        try:
            parse_shard_selector(text)
            codes.append(200)
        except APIError as err:
            codes.append(err.code)
    assert set(codes) <= {200, 400} and 400 in codes
