"""The viewers' one set of credential flags (``pycm top``, ``pycm dashboard``, ``pycm why``): the
same names and help in each, the same validation (one error line, exit 2), and what each flag
reaches — run in-process through ``pycm.cli.main``."""

from __future__ import annotations

import argparse
import ssl
from pathlib import Path

import pytest
import trustme

from pycm.cli import build_parser, main
from pycm.trace.credentials import NO_CREDENTIALS, Credentials, CredentialsError, from_flags
from tui.command import build_sources
from tui.sources import SseSource

VIEWERS = ("top", "dashboard", "why")
GROUP = "authentication and TLS towards the managers (kubectl's flags)"
SERVER = "https://127.0.0.1:1"


def _subparser(name: str) -> argparse.ArgumentParser:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            parser: argparse.ArgumentParser = action.choices[name]
            return parser
    raise AssertionError("pycm has no subcommands")


def _credential_flags(name: str) -> list[tuple[tuple[str, ...], str | None, str | None]]:
    (group,) = [g for g in _subparser(name)._action_groups if g.title == GROUP]
    return [(tuple(a.option_strings), a.metavar, a.help) for a in group._group_actions]


def test_viewer_commands_have_the_same_credential_flags_and_help() -> None:
    flags = {name: _credential_flags(name) for name in VIEWERS}
    assert [f[0][0] for f in flags["top"]] == [
        "--token",
        "--token-file",
        "--certificate-authority",
        "--insecure-skip-tls-verify",
        "--client-certificate",
        "--client-key",
        "--kubeconfig",
        "--context",
    ]
    assert flags["dashboard"] == flags["top"] and flags["why"] == flags["top"]


def _argv(viewer: str, flags: list[str]) -> list[str]:
    head = {"top": ["top"], "dashboard": ["dashboard"], "why": ["why", "deploy/default/web"]}
    return [*head[viewer], "--server", SERVER, *flags]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "token").write_text("secret-token\n")
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "notpem").write_text("secret-token\n")
    (tmp_path / "garbage.yaml").write_text("{{{ not: yaml: [\n  - ]]\n")
    (tmp_path / "a-directory").mkdir()
    names = {"token": "token", "empty": "empty", "notpem": "notpem", "garbage": "garbage.yaml"}
    names |= {"dir": "a-directory", "missing": "missing"}
    return {key: str(tmp_path / name) for key, name in names.items()}


# id: (the credential flags, what the one error line says); {name}: a file of the fixture's.
CASES = {
    "none": ([], NO_CREDENTIALS),
    "two-tokens": (
        ["--token", "t", "--token-file", "{token}"],
        "--token and --token-file are mutually exclusive",
    ),
    "ca-and-insecure": (
        ["--token", "t", "--certificate-authority", "{token}", "--insecure-skip-tls-verify"],
        "--certificate-authority and --insecure-skip-tls-verify are mutually exclusive",
    ),
    "cert-without-key": (
        ["--client-certificate", "{token}"],
        "--client-certificate and --client-key go together",
    ),
    "no-token-file": (["--token-file", "{missing}"], "--token-file {missing}: no such file"),
    "empty-token": (["--token-file", "{empty}"], "token file {empty} is empty"),
    "cert-a-directory": (
        ["--client-certificate", "{dir}", "--client-key", "{token}"],
        "--client-certificate {dir}: not a file",
    ),
    "ca-not-pem": (
        ["--token", "t", "--certificate-authority", "{notpem}"],
        "--certificate-authority {notpem}: ",
    ),
    "kc-garbage": (["--kubeconfig", "{garbage}"], "kubeconfig {garbage}: not YAML"),
}


@pytest.mark.parametrize("viewer", VIEWERS)
@pytest.mark.parametrize(("flags", "message"), list(CASES.values()), ids=list(CASES))
def test_viewer_bad_credentials_one_line_naming_the_flag_exit_2(
    viewer: str,
    flags: list[str],
    message: str,
    files: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = _argv(viewer, [flag.format(**files) for flag in flags])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert message.format(**files) in err
    assert "secret-token" not in err and "Traceback" not in err


def _flags(**given: object) -> argparse.Namespace:
    args = _subparser("top").parse_args(["--server", SERVER])
    for name, value in given.items():
        setattr(args, name, value)
    return args


def test_viewer_flags_override_the_kubeconfig_which_fills_the_rest(tmp_path: Path) -> None:
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    (tmp_path / "kc-token").write_text("from-kubeconfig\n")
    (tmp_path / "kc").write_text(
        "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
        "clusters: [{name: k, cluster: {server: 'https://x', certificate-authority: ca.pem}}]\n"
        "users: [{name: u, user: {tokenFile: kc-token}}]\n"
    )
    filled = from_flags(_flags(kubeconfig=str(tmp_path / "kc")))
    assert filled == Credentials(
        token="from-kubeconfig",
        token_file=str(tmp_path / "kc-token"),  # read again on reconnect, as a flag's is
        ca_file=str(tmp_path / "ca.pem"),
    )
    overridden = from_flags(_flags(kubeconfig=str(tmp_path / "kc"), token="from-flag"))
    assert (overridden.token, overridden.token_file) == ("from-flag", "")
    assert overridden.ca_file == str(tmp_path / "ca.pem")


def test_top_sources_get_the_client_certificate_and_the_token_file(tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("viewer@example")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    (tmp_path / "token").write_text("abc\n")
    argv = ["top", "--server", SERVER, "--token-file", str(tmp_path / "token")]
    argv += ["--client-certificate", str(tmp_path / "cert.pem")]
    argv += ["--client-key", str(tmp_path / "key.pem"), "--insecure-skip-tls-verify"]
    (source,) = build_sources(build_parser().parse_args(argv))
    assert isinstance(source, SseSource)
    assert source._client_cert == (str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))
    assert (source._token, source._token_file) == ("abc", str(tmp_path / "token"))
    assert source._verify is False


def test_credentials_tls_loads_the_client_certificate_or_names_it(tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("viewer@example")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    good = Credentials(client_cert=(str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")))
    assert isinstance(good.tls(), ssl.SSLContext)
    wrong = Credentials(client_cert=(str(tmp_path / "key.pem"), str(tmp_path / "cert.pem")))
    with pytest.raises(CredentialsError, match=r"^--client-certificate \S*key\.pem: "):
        wrong.tls()
