"""The bulk body framings of pycm.kube.chunked: any split of a framed stream gives the body."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycm.kube.chunked import Chunked, FramingError, Length, UntilClose, framing_for


def _frame(
    chunks: list[bytes], extensions: list[bytes], trailers: list[bytes], upper: bool
) -> bytes:
    out = []
    for i, chunk in enumerate(chunks):
        size = b"%X" % len(chunk) if upper else b"%x" % len(chunk)
        ext = extensions[i % len(extensions)] if extensions else b""
        out.append(size + ext + b"\r\n" + chunk + b"\r\n")
    out.append(b"0\r\n" + b"".join(t + b"\r\n" for t in trailers) + b"\r\n")
    return b"".join(out)


def _feed_split(framing: Chunked | Length, stream: bytes, cuts: list[int]) -> bytes:
    got = []
    start = 0
    for cut in [*sorted(set(cuts)), len(stream)]:
        got.append(framing.feed(stream[start:cut]))
        start = cut
    return b"".join(got)


_extensions = st.lists(st.sampled_from([b"", b";a=b", b"; name", b';q="x;y"', b"  "]), max_size=3)
_trailers = st.lists(st.sampled_from([b"X-Trailer: 1", b"Expires: never", b"A:"]), max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    chunks=st.lists(st.binary(min_size=1, max_size=300), max_size=12),
    extensions=_extensions,
    trailers=_trailers,
    upper=st.booleans(),
    data=st.data(),
)
def test_chunked_any_split_of_the_stream_gives_exactly_the_body(
    chunks: list[bytes],
    extensions: list[bytes],
    trailers: list[bytes],
    upper: bool,
    data: st.DataObject,
) -> None:
    stream = _frame(chunks, extensions, trailers, upper)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=20))
    framing = Chunked()
    assert _feed_split(framing, stream, cuts) == b"".join(chunks)
    assert framing.done
    framing.end()  # a complete body: the close is no error


def test_chunked_split_at_every_byte_gives_the_body() -> None:
    body = [b'{"type":"ADDED"}\n', b"x" * 40, b"\r\n\r\n"]  # data that looks like framing too
    stream = _frame(body, [b";ext=1"], [b"T: v"], upper=False)
    for cut in range(len(stream) + 1):
        framing = Chunked()
        assert framing.feed(stream[:cut]) + framing.feed(stream[cut:]) == b"".join(body), cut
        assert framing.done


def test_chunked_one_read_of_many_chunks_is_one_block() -> None:
    lines = [b'{"type":"MODIFIED","n":%d}\n' % i for i in range(40)]
    assert Chunked().feed(_frame(lines, [], [], upper=False)) == b"".join(lines)


def test_chunked_bytes_after_the_last_chunk_are_ignored() -> None:
    framing = Chunked()
    assert framing.feed(b"3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n") == b"abc"
    assert framing.done
    assert framing.feed(b"more") == b""


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(b"zz\r\nabc\r\n", id="not-hex"),
        pytest.param(b"-3\r\nabc\r\n", id="negative"),
        pytest.param(b"0x3\r\nabc\r\n", id="0x-prefix"),
        pytest.param(b"3\nabc\r\n", id="bare-lf"),
        pytest.param(b"3\r\nabcX\r\n", id="data-longer-than-size"),
        pytest.param(b"3\r\nabc\rX", id="cr-without-lf"),
        pytest.param(b"11111111111111111\r\n", id="size-over-64-bits"),
    ],
)
def test_chunked_bad_framing_raises(stream: bytes) -> None:
    framing = Chunked()
    try:
        framing.feed(stream)
    except FramingError:
        return
    assert isinstance(framing.error, FramingError)  # found after body bytes given first
    with pytest.raises(FramingError):
        framing.feed(b"")


def test_chunked_body_bytes_before_bad_framing_are_given_then_the_error() -> None:
    framing = Chunked()
    assert framing.feed(b"3\r\nabc\r\n2\r\nde\r\nzz\r\n") == b"abcde"
    assert isinstance(framing.error, FramingError)
    with pytest.raises(FramingError, match="bad chunk size line b'zz"):
        framing.feed(b"2\r\nfg\r\n")
    with pytest.raises(FramingError, match="bad chunk size line"):
        framing.end()


def test_chunked_bad_framing_raises_when_split_too() -> None:
    framing = Chunked()
    assert framing.feed(b"3\r\nabc\r") == b"abc"
    with pytest.raises(FramingError, match="CRLF"):
        framing.feed(b"X")


def test_chunked_endless_size_line_raises() -> None:
    framing = Chunked()
    framing.feed(b"1" * 8)
    with pytest.raises(FramingError, match="longer than"):
        framing.feed(b";" + b"e" * 20_000)


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(b"", id="nothing"),
        pytest.param(b"5\r\nab", id="mid-chunk"),
        pytest.param(b"5\r\nabcde", id="before-crlf"),
        pytest.param(b"5\r\nabcde\r\n0\r\n", id="before-trailer-end"),
    ],
)
def test_chunked_close_before_the_last_chunk_raises(stream: bytes) -> None:
    framing = Chunked()
    framing.feed(stream)
    with pytest.raises(FramingError, match="connection closed"):
        framing.end()


@given(body=st.binary(max_size=200), data=st.data())
def test_length_any_split_gives_the_body_and_no_more(body: bytes, data: st.DataObject) -> None:
    stream = body + b"extra bytes of nothing"
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=8))
    framing = Length(len(body))
    assert _feed_split(framing, stream, cuts) == body
    assert framing.done


def test_length_close_before_the_end_raises() -> None:
    framing = Length(10)
    assert framing.feed(b"12345") == b"12345"
    with pytest.raises(FramingError, match="5 body bytes"):
        framing.end()


def test_until_close_gives_everything_until_the_end() -> None:
    framing = UntilClose()
    assert framing.feed(b"ab") + framing.feed(b"cd") == b"abcd"
    assert not framing.done
    framing.end()
    assert framing.done


@pytest.mark.parametrize(
    ("status", "headers", "method", "kind", "done"),
    [
        pytest.param(200, [(b"transfer-encoding", b"chunked")], b"GET", Chunked, False, id="te"),
        pytest.param(200, [(b"content-length", b"7")], b"GET", Length, False, id="length"),
        pytest.param(200, [(b"content-length", b"0")], b"GET", Length, True, id="empty"),
        pytest.param(200, [], b"GET", UntilClose, False, id="close-delimited"),
        pytest.param(204, [], b"GET", Length, True, id="no-content"),
        pytest.param(304, [(b"content-length", b"9")], b"GET", Length, True, id="not-modified"),
        pytest.param(200, [(b"content-length", b"9")], b"HEAD", Length, True, id="head"),
    ],
)
def test_framing_for_follows_the_status_and_headers(
    status: int, headers: list[tuple[bytes, bytes]], method: bytes, kind: type, done: bool
) -> None:
    framing = framing_for(status, headers, method)
    assert isinstance(framing, kind)
    assert framing.done is done
