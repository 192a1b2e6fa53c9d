"""`pycm top` flags: help, bad input (exit 2, one line, no traceback), credentials."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest

from pycm.cli import build_parser
from pycm.trace.credentials import CredentialsError, from_kubeconfig
from tui.command import build_sources
from tui.sources import ReplaySource, SseSource


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pycm", "top", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_top_help_lists_the_flags() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for flag in (
        "--server",
        "--token-file",
        "--certificate-authority",
        "--insecure-skip-tls-verify",
        "--kubeconfig",
        "--replay",
    ):
        assert flag in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param([], "give --server URL", id="no-source"),
        pytest.param(["--bogus"], "unrecognized arguments: --bogus", id="unknown-flag"),
        pytest.param(["--server", "127.0.0.1:10257"], "want http(s)://host:port", id="bad-url"),
        pytest.param(
            ["--server", "https://a:1", "--token", "x", "--token-file", "f"],
            "mutually exclusive",
            id="two-tokens",
        ),
        pytest.param(
            # Named by its flag, as every viewer names a file it cannot use (was "token file").
            ["--server", "https://a:1", "--token-file", "/nonexistent/token"],
            "--token-file /nonexistent/token: no such file",
            id="missing-token-file",
        ),
        pytest.param(["--replay", "/nonexistent/trace.jsonl"], "no such file", id="no-recording"),
        pytest.param(["--replay", "/"], "--replay /: not a file", id="replay-a-directory"),
        pytest.param(
            # The lease timings come from the trace (lease.election_configured), not flags.
            ["--server", "https://a:1", "--leader-elect-renew-deadline", "20s"],
            "unrecognized arguments: --leader-elect-renew-deadline 20s",
            id="no-timing-flags",
        ),
        pytest.param(
            ["--server", "https://a:1", "--kubeconfig", "/nonexistent/kc"],
            "kubeconfig /nonexistent/kc",
            id="missing-kubeconfig",
        ),
    ],
)
def test_top_bad_input_exits_2_with_one_error_line(args: list[str], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0].startswith("Error: ")
    assert message in result.stderr.splitlines()[0]


def test_top_replay_of_a_file_that_is_no_recording_exits_2_before_the_screen(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("".join(f"note {i}\n" for i in range(150)))
    result = run_cli("--replay", str(notes))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"Error: --replay {notes}: not a recording: its first 100 lines are not events "
        "(line 1: not JSON: "
    )
    assert result.stdout == ""  # no screen was drawn


def parse(*args: str) -> list[object]:
    return list(build_sources(build_parser().parse_args(["top", *args])))


def test_top_several_servers_make_several_sse_sources(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("abc\n")
    sources = parse(
        "--server",
        "https://a:10257",
        "--server",
        "https://b:10257/",
        "--token-file",
        str(token),
        "--insecure-skip-tls-verify",
    )
    assert [type(s) for s in sources] == [SseSource, SseSource]
    assert [s.server for s in sources] == ["https://a:10257", "https://b:10257"]  # type: ignore[attr-defined]
    assert all(s._token == "abc" for s in sources)  # type: ignore[attr-defined]


def test_top_replay_source(tmp_path: Path) -> None:
    rec = tmp_path / "trace.jsonl"
    rec.write_text("")
    (source,) = parse("--replay", str(rec), "--speed", "4")
    assert isinstance(source, ReplaySource) and source.speed == 4


def kubeconfig(tmp_path: Path, user: str) -> Path:
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    path = tmp_path / "kc"
    path.write_text(f"""
apiVersion: v1
kind: Config
current-context: demo
contexts:
- name: demo
  context: {{cluster: emu, user: admin}}
clusters:
- name: emu
  cluster: {{server: "https://127.0.0.1:6443", certificate-authority-data: {ca.decode()}}}
users:
- name: admin
  user: {user}
""")
    return path


def test_kubeconfig_token_and_ca_data(tmp_path: Path) -> None:
    creds = from_kubeconfig(str(kubeconfig(tmp_path, "{token: admin-token}")))
    assert creds.token == "admin-token"
    assert creds.ca_data.startswith("-----BEGIN CERTIFICATE-----")
    assert not creds.insecure


def test_kubeconfig_token_file_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "tok").write_text("from-file\n")
    creds = from_kubeconfig(str(kubeconfig(tmp_path, "{tokenFile: tok}")))
    assert creds.token == "from-file"


def test_kubeconfig_missing_context_is_one_error(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path, "{token: t}")
    with pytest.raises(CredentialsError, match="no context named 'other'"):
        from_kubeconfig(str(path), "other")


def test_certificate_authority_file_trusts_that_ca_only(tmp_path: Path) -> None:
    import ssl

    import trustme

    from pycm.trace.credentials import Credentials

    ca = trustme.CA()
    pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    context = Credentials(ca_file=str(pem)).verify()
    assert isinstance(context, ssl.SSLContext)
    assert len(context.get_ca_certs()) == 1
    assert Credentials(insecure=True, ca_file=str(pem)).verify() is False
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate")
    with pytest.raises(CredentialsError, match="certificate authority"):
        Credentials(ca_file=str(bad)).verify()
