"""Serving limits on real ``pycm run`` processes (pycm.util.serving_limits), over raw sockets.

Two managers against one ``pycm sim`` process, started once for the module: ``quick`` with
short timeouts (TLS handshake 0.5 s, request head 0.5 s, idle 1 s), ``capped`` with a cap of 4
connections and long timeouts (so connections it holds stay held while the test looks). Each
test closes what it opened.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pycm.util.ports import free_port
from pycm.util.serving_limits import LINGER

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0
HEAD_TIMEOUT, HANDSHAKE_TIMEOUT, IDLE_TIMEOUT = 0.5, 0.5, 1.0
CAP = 4
# A loaded CI box: how much later than its timeout a close may be seen.
SLACK = 2.0


@dataclass(frozen=True)
class Manager:
    port: int
    process: subprocess.Popen[bytes]
    log: Path


def _tls() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the limits are the subject here, not the certificate
    return context


def _connect(port: int, *, timeout: float = 5.0) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        return _tls().wrap_socket(raw)
    except BaseException:
        raw.close()
        raise


def _connect_completed(port: int, attempts: int = 8) -> ssl.SSLSocket:
    """A connection whose handshake completed **on both sides**, for the tests that are not
    about handshakes: the ``quick`` manager drops a handshake after 0.5 s, which a starved test
    process can exceed — that case is the handshake-timeout test's, so retried here.

    In TLS 1.3 the client is done before the server has read its Finished, so a returned
    ``wrap_socket`` does not prove the server's handshake timer was stopped. The server sends its
    session tickets only once it has finished; a ticket seen here is that proof."""
    for attempt in range(attempts):
        try:
            sock = _connect(port)
        except ssl.SSLEOFError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.1 * attempt)  # a starved machine: let the load pass a little
            continue
        if _server_finished_handshake(sock):
            return sock
        sock.close()
    raise AssertionError(f"no handshake completed on both sides in {attempts} attempts")


def _server_finished_handshake(sock: ssl.SSLSocket, wait: float = 5.0) -> bool:
    """True once the server's session ticket arrived; False if the server closed first."""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                if sock.recv(1) == b"":  # the server closed: its handshake timed out
                    return False
            except ssl.SSLWantReadError:
                pass  # no application data, as expected; any ticket records were read
            except (ssl.SSLEOFError, ConnectionError):
                return False
            if sock.session is not None and sock.session.has_ticket:
                return True
            time.sleep(0.005)
        raise AssertionError(f"the server neither finished the handshake nor closed in {wait} s")
    finally:
        sock.settimeout(timeout)


def _read_response(sock: socket.socket) -> bytes:
    """One response with a Content-Length body (what /healthz sends)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _seconds_until_closed(sock: socket.socket, limit: float = 10.0) -> float:
    """How long until the server closes ``sock`` (EOF or reset); fails past ``limit``."""
    start = time.monotonic()
    sock.settimeout(limit)
    try:
        while sock.recv(65536):
            pass
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        pass
    except TimeoutError:
        pytest.fail(f"the server kept the connection open for {limit}s")
    return time.monotonic() - start


def _healthz(port: int) -> int:
    with contextlib.closing(_connect(port)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return int(_read_response(sock).split(b" ", 2)[1])


def _wait_serving(manager: Manager) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if manager.process.poll() is not None:
            pytest.fail(f"pycm run exited early:\n{manager.log.read_text()}")
        with contextlib.suppress(OSError, ValueError, IndexError):
            if _healthz(manager.port) == 200:
                return
        time.sleep(0.1)
    pytest.fail(f"pycm run did not serve in time:\n{manager.log.read_text()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("sim")
    path = tmp / "kubeconfig"
    sim = subprocess.Popen(
        [sys.executable, "-m", "pycm", "sim", "--kubelet=off", "--kubeconfig-out", str(path)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert sim.stdout is not None
        line = sim.stdout.readline().decode()
        assert line.startswith("pycm sim: serving"), line
        yield path
    finally:
        _stop(sim)
        if sim.stdout is not None:
            sim.stdout.close()


def _start(tmp: Path, kubeconfig: Path, name: str, flags: list[str]) -> Manager:
    port = free_port()
    log = tmp / f"{name}.log"
    argv = [sys.executable, "-m", "pycm", "run", "--kubeconfig", str(kubeconfig)]
    argv += ["--leader-elect=false", "--secure-port", str(port), "--bind-address", "127.0.0.1"]
    argv += ["--cert-dir", str(tmp / f"certs-{name}"), *flags]
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=os.environ
        )
    return Manager(port, process, log)


@pytest.fixture(scope="module")
def managers(
    kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Manager]]:
    tmp = tmp_path_factory.mktemp("managers")
    started = {
        "quick": _start(
            tmp,
            kubeconfig,
            "quick",
            [
                f"--request-head-timeout={int(HEAD_TIMEOUT * 1000)}ms",
                f"--tls-handshake-timeout={int(HANDSHAKE_TIMEOUT * 1000)}ms",
                f"--idle-connection-timeout={int(IDLE_TIMEOUT)}s",
            ],
        ),
        "capped": _start(tmp, kubeconfig, "capped", [f"--max-connections={CAP}"]),
    }
    try:
        for manager in started.values():
            _wait_serving(manager)
        yield started
    finally:
        for manager in started.values():
            _stop(manager.process)


def test_partial_request_is_closed_after_the_head_timeout(managers: dict[str, Manager]) -> None:
    connecting = time.monotonic()  # the head timer starts after this (at the connection)
    with contextlib.closing(_connect_completed(managers["quick"].port)) as sock:
        sent = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
        waited = _seconds_until_closed(sock)
    # Lower bound from before the connection, upper from the send: a loaded test process may
    # lag between the server's start of the timer and either of its own readings.
    assert sent + waited - connecting >= HEAD_TIMEOUT * 0.8
    assert waited <= HEAD_TIMEOUT + SLACK


def test_slow_head_trickled_byte_by_byte_is_closed_after_the_head_timeout(
    managers: dict[str, Manager],
) -> None:
    # Each byte is data; none of it may push the deadline back (slowloris).
    with contextlib.closing(_connect_completed(managers["quick"].port)) as sock:
        start = time.monotonic()
        with contextlib.suppress(OSError):
            for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: 1234567890\r\n":
                sock.sendall(bytes([byte]))
                time.sleep(0.05)
        waited = _seconds_until_closed(sock) + (time.monotonic() - start)
    assert waited <= HEAD_TIMEOUT + SLACK + 2.0


def test_idle_keep_alive_connection_is_closed_after_the_idle_timeout(
    managers: dict[str, Manager],
) -> None:
    with contextlib.closing(_connect_completed(managers["quick"].port)) as sock:
        sent = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _read_response(sock).startswith(b"HTTP/1.1 200 ")
        read = time.monotonic()
        waited = _seconds_until_closed(sock)
    # The server's idle timer starts when it has written the response: after ``sent``, and
    # before ``read`` — by how much a loaded test process lags in reading it (0.36 s once, in a
    # full suite). So the lower bound counts from the send, the upper one from the read.
    assert read + waited - sent >= IDLE_TIMEOUT * 0.8
    assert waited <= IDLE_TIMEOUT + SLACK


def test_tls_handshake_that_never_completes_is_dropped_after_the_handshake_timeout(
    managers: dict[str, Manager],
) -> None:
    connecting = time.monotonic()  # the handshake timer starts after this (at the accept)
    with socket.create_connection(("127.0.0.1", managers["quick"].port), timeout=5) as raw:
        sent = time.monotonic()
        raw.sendall(b"\x16\x03\x01\x00\xff")  # a ClientHello's record header, and no more
        waited = _seconds_until_closed(raw)
    assert sent + waited - connecting >= HANDSHAKE_TIMEOUT * 0.8  # (as the head timeout's)
    assert waited <= HANDSHAKE_TIMEOUT + SLACK


@pytest.mark.parametrize(
    "length",
    [pytest.param(2**64, id="2^64"), pytest.param(2**40, id="1TiB")],
)
def test_absurd_content_length_is_refused_at_once_and_the_connection_closed(
    managers: dict[str, Manager], length: int
) -> None:
    with contextlib.closing(_connect(managers["capped"].port)) as sock:  # long head timeout
        start = time.monotonic()
        sock.sendall(
            f"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode()
        )
        sock.sendall(b"x" * 1024)  # a little of the body, then the client stalls
        response = _read_response(sock)
        answered = time.monotonic() - start
        waited = _seconds_until_closed(sock)
    assert response.startswith(b"HTTP/1.1 413 "), response[:80]
    assert answered < 1.0  # refused before the body is read
    # Then the client has LINGER to read the answer, and the connection is closed, not held
    # until the client gives up (nor until the 32 s head timeout).
    # (The linger starts when the server has written the answer: after ``start``, before the
    # read that ``answered`` ends with, so the lower bound counts from ``start``.)
    assert answered + waited >= LINGER * 0.8
    assert waited <= LINGER + SLACK


def test_oversized_head_is_refused(managers: dict[str, Manager]) -> None:
    with contextlib.closing(_connect_completed(managers["quick"].port)) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 64 * 1024)
        response = _read_response(sock)
    assert response.startswith(b"HTTP/1.1 400 "), response[:80]


def test_connections_past_the_cap_are_refused_while_one_within_answers(
    managers: dict[str, Manager],
) -> None:
    port = managers["capped"].port
    with contextlib.ExitStack() as stack:
        kept = stack.enter_context(contextlib.closing(_connect(port)))
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _read_response(kept).startswith(b"HTTP/1.1 200 ")
        partial = [stack.enter_context(contextlib.closing(_connect(port))) for _ in range(CAP - 1)]
        for sock in partial:
            sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        time.sleep(0.2)  # the server has admitted them
        for _ in range(3):
            with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
                refused = _connect(port)
                # A connection closed before the handshake fails it; should the handshake have
                # raced through, the server's close is seen on the first read.
                refused.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                if not refused.recv(1):
                    raise ConnectionResetError("closed")
        # Said once in the log (not once per refusal).
        assert managers["capped"].log.read_text().count("refusing connections") == 1
        # The connection within the cap still answers.
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _read_response(kept).startswith(b"HTTP/1.1 200 ")
        # One partial connection closed frees its place.
        partial[0].close()
        time.sleep(0.2)
        assert _healthz(port) == 200
