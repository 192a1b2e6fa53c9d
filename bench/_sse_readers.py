"""Many SSE viewers in one process, for ``bench web``: ``python -m bench._sse_readers PORT PATH
VIEWERS TOKEN [TARGET]``.

Each viewer is a raw HTTP/1.1 connection that reads the stream and counts the occurrences of
``TOKEN`` (one per delivered event: ``"line":`` in the dashboard's events frames, ``event:
trace`` on ``/debug/pycm/events``). It prints ``ready`` once every viewer has its response
headers, then, with a ``TARGET``, ``done`` when every viewer has counted that many; it runs until
stdin closes.
"""

from __future__ import annotations

import asyncio
import sys


async def _viewer(
    port: int,
    path: str,
    token: bytes,
    counts: list[int],
    i: int,
    opened: asyncio.Event,
    progress: asyncio.Event,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    await reader.readuntil(b"\r\n\r\n")
    opened.set()
    carry = b""
    keep = len(token) - 1
    while chunk := await reader.read(1 << 18):
        data = carry + chunk
        counts[i] += data.count(token)
        carry = data[-keep:]
        progress.set()
    writer.close()


async def main(argv: list[str]) -> None:
    port, path, viewers, token = int(argv[0]), argv[1], int(argv[2]), argv[3].encode()
    target = int(argv[4]) if len(argv) > 4 else None
    counts = [0] * viewers
    opened = [asyncio.Event() for _ in range(viewers)]
    progress = asyncio.Event()
    tasks = [
        asyncio.create_task(_viewer(port, path, token, counts, i, opened[i], progress))
        for i in range(viewers)
    ]
    await asyncio.gather(*(o.wait() for o in opened))
    print("ready", flush=True)
    if target is not None:
        while min(counts) < target:
            progress.clear()
            await progress.wait()
        print("done", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
