"""No log forging: what a client controls (path, query, user agent, user name) reaches a log
line with its control characters escaped, in both --log-format values, through real HTTPS
requests to the secure server (the handler chain's logging, 401 and 403 answers)."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator

import orjson
import pytest

from pycm.app.logs import configure_logging
from pycm.server.user import UserInfo
from tests.server.conftest import ClientFor, FakeTokenReviewer, Serve, bearer

# Any C0 control but the line feed that ends each record, DEL, C1, U+2028/U+2029.
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_TEXT_HEADER = re.compile(r"^[DIWEC]\d{4} \d\d:\d\d:\d\d pycm\.")

FORGED = "/metrics%0aE1203%2012:00:00%20pycm.app%5D%20FORGED"
PATHS = [
    FORGED,  # LF: a forged klog line
    "/metrics%0d%0aI1203%2012:00:00%20pycm.x%5D%20CRLF-FORGED",  # CR LF
    "/healthz%00NUL-after",  # NUL
    "/metrics%1b%5b2J%1b%5b31mANSI",  # ESC [2J (clear screen), ESC [31m (red)
    "/metrics%c2%85NEL%c2%9bC1",  # C1 controls NEL and CSI, UTF-8 encoded
    "/metrics%e2%80%a8LS",  # U+2028 line separator
]
EVIL_USER = "eve\nE1203 12:00:00 pycm.app] FORGED-USER\x1b[31m"
EVIL_AGENT = b"agent\x85NEL\x9b31mCSI"  # C1 bytes are legal obs-text in an HTTP header


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    """Where the root logger's handler (as ``pycm run`` installs it) writes; restored after."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    stream = io.StringIO()
    yield stream
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])


async def _send_hostile_requests(serve: Serve, client_for: ClientFor) -> None:
    reviewer = FakeTokenReviewer({"eve-token": UserInfo(name=EVIL_USER, groups=("x",))})
    served = await serve(reviewer=reviewer, allowed=())
    client = client_for(served.server.cert_file)
    for path in PATHS:  # anonymous: 403, logged by authorization
        response = await client.get(served.url + path + "?q=%0aFORGED-QUERY")
        assert response.status_code == 403, path
    # An invalid token: 401, logged by authentication with the path.
    response = await client.get(served.url + FORGED, headers=bearer("no-such-token"))
    assert response.status_code == 401
    # A valid token for a user whose name holds controls: 403, logged with the name.
    response = await client.get(
        served.url + "/metrics", headers={**bearer("eve-token"), "User-Agent": EVIL_AGENT}
    )
    assert response.status_code == 403


@pytest.mark.asyncio
async def test_log_text_format_hostile_request_fields_are_escaped_one_record_per_line(
    serve: Serve, client_for: ClientFor, log_stream: io.StringIO
) -> None:
    configure_logging("text", 4, stream=log_stream)
    await _send_hostile_requests(serve, client_for)
    out = log_stream.getvalue()
    lines = out.splitlines()
    assert lines, "nothing was logged"
    assert _CONTROL.search(out) is None, [line for line in lines if _CONTROL.search(line)]
    # splitlines() also splits at \r, \x85, \u2028…: every line it finds is a record's start.
    assert [line for line in lines if not _TEXT_HEADER.match(line)] == []
    assert "FORGED" in out and not any("] FORGED" in line[:40] for line in lines)
    http = [line for line in lines if " pycm.server.http] " in line]
    assert any(
        "/metrics\\nE1203 12:00:00 pycm.app] FORGED?q=%0aFORGED-QUERY 403" in line for line in http
    )
    assert any("/healthz\\x00NUL-after?q=%0aFORGED-QUERY 403" in line for line in http)
    assert any("\\x1b[2J\\x1b[31mANSI" in line for line in http)
    assert any('agent="agent\\x85NEL\\x9b31mCSI"' in line for line in http)
    assert any("user=eve\\nE1203 12:00:00 pycm.app] FORGED-USER\\x1b[31m" in line for line in http)
    authn = [line for line in lines if " pycm.server.authentication] " in line]
    assert len(authn) == 1 and "/metrics\\nE1203" in authn[0]
    authz = [line for line in lines if " pycm.server.authorization] " in line]
    assert any("forbidden: eve\\nE1203" in line for line in authz)


@pytest.mark.asyncio
async def test_log_json_format_hostile_request_fields_are_escaped_in_every_record(
    serve: Serve, client_for: ClientFor, log_stream: io.StringIO
) -> None:
    configure_logging("json", 4, stream=log_stream)
    await _send_hostile_requests(serve, client_for)
    lines = log_stream.getvalue().split("\n")
    assert lines.pop() == ""
    records = [orjson.loads(line) for line in lines]  # every line is one whole record
    messages = [r["msg"] for r in records]
    assert [m for m in messages if _CONTROL.search(m) or "\n" in m] == []
    http = [r["msg"] for r in records if r["logger"] == "pycm.server.http"]
    assert any(
        "/metrics\\nE1203 12:00:00 pycm.app] FORGED?q=%0aFORGED-QUERY 403" in m for m in http
    )
    assert any("/metrics\\r\\nI1203" in m for m in http)
    assert any("/healthz\\x00NUL-after" in m for m in http)
    assert any("\\u2028LS" in m for m in http)
    authn = [r["msg"] for r in records if r["logger"] == "pycm.server.authentication"]
    assert len(authn) == 1 and "/metrics\\nE1203" in authn[0]
    authz = [r["msg"] for r in records if r["logger"] == "pycm.server.authorization"]
    assert any("forbidden: eve\\nE1203 12:00:00 pycm.app] FORGED-USER\\x1b[31m" in m for m in authz)


def test_log_any_logger_message_with_controls_is_one_escaped_line(log_stream: io.StringIO) -> None:
    """The formatter is the guarantee for loggers that do not escape (third-party ones)."""
    configure_logging("text", 0, stream=log_stream)
    logging.getLogger("thirdparty").warning("a\r\nW1203 forged\x00\x1b[0m")
    [line] = log_stream.getvalue().splitlines()
    assert line.endswith("thirdparty] a\\r\\nW1203 forged\\x00\\x1b[0m")
