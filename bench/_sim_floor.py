"""The floor under the emulator's request path (bench sim's peer for ``sim.get`` and
``sim.create``): a minimal endpoint served in its own process on the emulator's stack
(:class:`pycm.sim.serving.AppServer`: the listening socket, the connection gate, the same TLS
setting, uvicorn's httptools protocol with the head bound, Starlette's routing to one
catch-all endpoint), with nothing of the API behind it.

The endpoint answers GET with ``body`` (200) and any other method, once it has read the
request's body, with ``body`` (201); ``body`` is an object the emulator served, so both answer
the same bytes. Authentication, routing to a resource, admission, storage and encoding are what
the emulator adds to this.

The child prints "URL CA_FILE" ("-" without TLS) and serves until its stdin closes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_STOP_TIMEOUT = 30.0

# argv[1]: "tls" or "plain"; argv[2]: the file holding the body to answer with.
_SCRIPT = """
import asyncio, sys, tempfile
from pathlib import Path
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from pycm.sim.options import SIM_SERVING_LIMITS
from pycm.sim.serving import AppServer, tls_context

BODY = Path(sys.argv[2]).read_bytes()

async def endpoint(request: Request) -> Response:
    if request.method == "GET":
        return Response(BODY, 200, media_type="application/json")
    await request.body()
    return Response(BODY, 201, media_type="application/json")

async def main() -> None:
    app = Starlette(routes=[Route("/{path:path}", endpoint, methods=["GET", "POST"])])
    with tempfile.TemporaryDirectory(prefix="bench-sim-floor-") as tmp:
        context, ca_file = None, "-"
        if sys.argv[1] == "tls":
            context, ca_pem = tls_context(Path(tmp), "127.0.0.1")
            ca_file = str(Path(tmp) / "ca.crt")
            Path(ca_file).write_bytes(ca_pem)
        server = AppServer(app, "127.0.0.1", 0, SIM_SERVING_LIMITS, context)
        await server.start()
        try:
            print(server.url, ca_file, flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        finally:
            await server.stop()

asyncio.run(main())
"""


@contextmanager
def floor_child(body: bytes, *, tls: bool) -> Iterator[tuple[str, str | None]]:
    """The floor's process answering ``body``; yields (url, CA file or None) and stops it."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    with tempfile.TemporaryDirectory(prefix="bench-sim-floor-") as tmp:
        body_file = Path(tmp) / "body.json"
        body_file.write_bytes(body)
        argv = [sys.executable, "-c", _SCRIPT, "tls" if tls else "plain", str(body_file)]
        child = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        try:
            assert child.stdout is not None and child.stdin is not None
            line = child.stdout.readline().split()  # bounded: the child prints or exits
            if len(line) != 2:
                raise RuntimeError(f"the floor did not start: {line!r}")
            yield line[0], None if line[1] == "-" else line[1]
        finally:
            if child.stdin is not None:
                child.stdin.close()
            try:
                child.wait(timeout=_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGKILL)
                child.wait()
            if child.stdout is not None:
                child.stdout.close()
