"""The codec: every kind round-trips losslessly; unknown kinds survive; bad input is an error."""

from __future__ import annotations

import enum
from typing import Any

import orjson
import pytest

from pycm.trace.codec import CodecError, UnknownEvent, decode, encode, to_dict
from pycm.trace.events import ENVELOPE_FIELDS, REGISTRY, Event, KindInfo, Outcome
from pycm.trace.kinds import ReconcileFinished, ReconcileResult, WatchClosed, WatchCloseReason


def _sample(info: KindInfo) -> Event:
    """An instance of the kind with a non-default value in every field."""
    values: dict[str, Any] = {
        "seq": 42,
        "ts": 1_700_000_000_123_456_789,
        "instance": "host_1234",
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "span_id": "b7ad6b7169203331",
        "parent_id": "00f067aa0ba902b7",
        "dur_ns": 987_654,
    }
    for name, type_text in info.fields:
        enum_cls = info.enums.get(name)
        if enum_cls is not None:
            values[name] = list(enum_cls)[-1]
        elif type_text == "bool":
            values[name] = True
        elif type_text == "int":
            values[name] = 7
        elif type_text == "float":
            values[name] = 2.5
        else:
            values[name] = f"{name}-value"
    if "outcome" in values:
        values["outcome"] = Outcome.ERROR
    return info.cls(**values)


@pytest.mark.parametrize("info", [pytest.param(i, id=k) for k, i in sorted(REGISTRY.items())])
def test_codec_round_trip_is_lossless_for_every_kind(info: KindInfo) -> None:
    event = _sample(info)
    data = encode(event)
    back = decode(data)
    assert back == event
    assert type(back) is info.cls
    assert encode(back) == data
    obj = orjson.loads(data)
    assert obj["kind"] == info.kind
    assert list(obj)[: len(ENVELOPE_FIELDS) + 1] == ["kind", *ENVELOPE_FIELDS]


def test_encode_writes_enums_as_their_values() -> None:
    obj = to_dict(WatchClosed(resource="pods", reason=WatchCloseReason.EXPIRED))
    assert obj["reason"] == "expired"
    assert obj["kind"] == "informer.watch_closed"


def test_decode_restores_enum_members() -> None:
    event = decode(encode(ReconcileFinished(result=ReconcileResult.CONFLICT)))
    assert isinstance(event, ReconcileFinished)
    assert event.result is ReconcileResult.CONFLICT
    assert event.outcome is Outcome.OK


def test_unknown_kind_decodes_and_reencodes_to_the_same_object() -> None:
    original = {"kind": "future.thing", "seq": 9, "ts": 5, "instance": "x", "widgets": 3}
    event = decode(orjson.dumps(original))
    assert isinstance(event, UnknownEvent)
    assert (event.kind, event.seq, event.instance) == ("future.thing", 9, "x")
    again = orjson.loads(encode(event))
    assert {k: again[k] for k in original} == original


def test_unknown_attributes_of_a_known_kind_are_dropped() -> None:
    event = decode(b'{"kind":"queue.add","queue":"q","key":"k","from_the_future":1}')
    assert to_dict(event)["key"] == "k"
    assert "from_the_future" not in to_dict(event)


def test_unknown_enum_value_is_kept_as_text() -> None:
    event = decode(b'{"kind":"informer.watch_closed","reason":"meteor"}')
    assert isinstance(event, WatchClosed)
    assert event.reason == "meteor"
    assert not isinstance(event.reason, enum.Enum)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"not json", id="not-json"),
        pytest.param(b"[1, 2]", id="not-an-object"),
        pytest.param(b'{"seq": 1}', id="no-kind"),
        pytest.param(b'{"kind": ""}', id="empty-kind"),
        pytest.param(b'{"kind": 5}', id="kind-not-text"),
    ],
)
def test_decode_rejects_what_is_not_an_event(data: bytes) -> None:
    with pytest.raises(CodecError):
        decode(data)
