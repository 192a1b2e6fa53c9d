"""The watch reader's line splitting: whatever the chunking, the same lines in the same order.

A server joins the events it has ready into large chunks, and a socket read ends anywhere: a
line may straddle chunks, a very long one spans many, a chunk may be empty or end exactly at a
newline, the last line may lack its newline. Both readers (decoded events and bulk raw lines)
must give every line once, in order.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import httpx
import orjson
import pytest

from pycm.kube import PODS, Client
from tests.kube.conftest import Recorder


def _line(i: int, pad: int = 0) -> bytes:
    obj = {"metadata": {"name": f"p{i}", "resourceVersion": str(i)}, "pad": "x" * pad}
    return orjson.dumps({"type": "MODIFIED", "object": obj})


def _stream(chunks: list[bytes]) -> httpx.Response:
    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return httpx.Response(200, content=body(), headers={"content-type": "application/json"})


def _cut(data: bytes, rng: random.Random, max_len: int) -> list[bytes]:
    """``data`` in chunks of random lengths (empty ones included)."""
    chunks, at = [], 0
    while at < len(data):
        size = rng.randrange(0, max_len)
        chunks.append(data[at : at + size])
        at += size
    return chunks


async def _batches(client: Client, recorder: Recorder, chunks: list[bytes]) -> list[list[bytes]]:
    recorder.responses.append(_stream(chunks))
    async with client.watch(PODS) as w:
        return [batch async for batch in w.line_batches()]


async def _names(client: Client, recorder: Recorder, chunks: list[bytes]) -> list[str]:
    recorder.responses.append(_stream(chunks))
    async with client.watch(PODS) as w:
        return [ev.object["metadata"]["name"] async for ev in w]


# Lines of very different lengths (one of 300 KB, longer than any read), blank lines between
# some, and the last one without its newline.
LINES = [_line(i, pad=(300_000 if i == 7 else (i * 997) % 9000)) for i in range(40)]
DATA = b"\n".join(line + (b"\n\n" if i % 9 == 0 else b"") for i, line in enumerate(LINES))
NAMES = [f"p{i}" for i in range(40)]


@pytest.mark.asyncio
@pytest.mark.parametrize("seed", range(6))
async def test_watch_lines_survive_any_chunking(
    client: Client, recorder: Recorder, seed: int
) -> None:
    rng = random.Random(seed)
    chunks = _cut(DATA, rng, max_len=rng.choice([40, 700, 20_000, 70_000]))
    batches = await _batches(client, recorder, chunks)
    assert [line for batch in batches for line in batch] == LINES
    assert all(batches), "no empty batch"
    assert await _names(client, recorder, chunks) == NAMES


@pytest.mark.asyncio
async def test_watch_line_split_at_every_byte_boundary(client: Client, recorder: Recorder) -> None:
    short = [_line(i) for i in range(3)]
    data = b"\n".join(short) + b"\n"
    for cut in range(1, len(data)):
        batches = await _batches(client, recorder, [data[:cut], data[cut:]])
        assert [line for batch in batches for line in batch] == short, cut


@pytest.mark.asyncio
async def test_watch_one_chunk_of_many_lines_is_one_batch(
    client: Client, recorder: Recorder
) -> None:
    data = b"\n".join(LINES[:5]) + b"\n"
    assert await _batches(client, recorder, [data]) == [LINES[:5]]


@pytest.mark.asyncio
async def test_watch_empty_final_chunk_and_whitespace_lines(
    client: Client, recorder: Recorder
) -> None:
    chunks = [LINES[0] + b"\n  \n" + LINES[1][:10], LINES[1][10:] + b"\n", b"", b"\n", b""]
    assert await _batches(client, recorder, chunks) == [[LINES[0]], [LINES[1]]]
    assert await _names(client, recorder, chunks) == ["p0", "p1"]


@pytest.mark.asyncio
async def test_watch_stream_of_only_blank_lines_has_no_events(
    client: Client, recorder: Recorder
) -> None:
    assert await _batches(client, recorder, [b"\n", b"\n \n", b" "]) == []
    assert await _names(client, recorder, [b"\n", b"\n \n", b" "]) == []


@pytest.mark.asyncio
async def test_watch_events_then_batches_on_one_stream_lose_no_line(
    client: Client, recorder: Recorder
) -> None:
    """Lines split off by the event iterator and not yet returned come first in the batches."""
    recorder.responses.append(_stream([b"\n".join(LINES[:4]) + b"\n", LINES[4]]))
    async with client.watch(PODS) as w:
        first = await anext(w)
        rest = [batch async for batch in w.line_batches()]
        assert w.events == 5
    assert first.object["metadata"]["name"] == "p0"
    assert rest == [LINES[1:4], [LINES[4]]]
