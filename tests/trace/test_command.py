"""``pycm trace``: kinds (plain and Markdown) and cat, through ``pycm.cli.main``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pycm.cli import main
from pycm.trace.codec import encode
from pycm.trace.events import REGISTRY, Event
from pycm.trace.kinds import (
    ItemAdded,
    LeaseAcquired,
    LeaseRenewed,
    ReconcileFinished,
    ReconcileResult,
)
from pycm.trace.recorder import read_events
from tests.trace.kind_samples import all_samples

_T0 = 1_764_680_000_123_456_789  # 2025-12-02T12:53:20.123456789Z


def _record(path: Path, events: list[Event], tail: bytes = b"") -> None:
    path.write_bytes(b"".join(encode(e) + b"\n" for e in events) + tail)


# --- kinds --------------------------------------------------------------------------------------


def test_trace_kinds_plain_lists_every_kind_with_role_and_class(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["trace", "kinds"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()]
    pycm_kinds = sorted(k for k, i in REGISTRY.items() if i.cls.__module__.startswith("pycm."))
    assert [r[0] for r in rows] == pycm_kinds
    by_name = {r[0]: r[1:] for r in rows}
    assert by_name["reconcile.begin"] == ["begin", "ReconcileStarted"]
    assert by_name["reconcile.end"] == ["end", "ReconcileFinished"]
    assert by_name["lease.acquired"] == ["point", "LeaseAcquired"]


def test_trace_kinds_markdown_documents_every_kind_and_enum(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["trace", "kinds", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Trace events\n")
    assert "## The envelope" in out
    assert "## Wire format" in out
    for name, info in REGISTRY.items():
        if info.cls.__module__.startswith("pycm."):
            assert f"`{name}`" in out
            assert f"- class: `{info.cls.__name__}`" in out
    # The envelope table comes from events.py's docstring: every field, with its meaning.
    assert "| `trace_id` | `str` | 32 hex digits (W3C trace-id)" in out
    # An attribute's trailing comment becomes its description; enum values are listed.
    assert re.search(r"\| `action` \| `str` \| `\"\"` \| what the sync did", out)
    assert "`success`, `requeue`, `requeue_after`, `error`, `conflict`" in out
    assert "| `expired` | 410 Gone / Expired" in out
    assert "begins step `reconcile` (ended by `reconcile.end`, same span id)" in out
    # A step's begin is listed before its end.
    assert out.index("`startup.begin`") < out.index("`startup.end`")


def test_trace_kinds_markdown_example_line_decodes(capsys: pytest.CaptureFixture[str]) -> None:
    from pycm.trace.codec import decode

    main(["trace", "kinds", "--markdown"])
    out = capsys.readouterr().out
    example = out.split("```json\n", 1)[1].split("\n", 1)[0]
    assert isinstance(decode(example), ItemAdded)


# --- cat ----------------------------------------------------------------------------------------


def test_trace_cat_prints_one_line_per_event_with_changed_attrs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    _record(
        path,
        [
            LeaseAcquired(lease="kube-system/pycm", identity="a_1", ts=_T0, instance="a_1"),
            ReconcileFinished(
                controller="deployment",
                key="default/web",
                result=ReconcileResult.REQUEUE,
                ts=_T0 + 1_500_000,
                instance="a_1",
                dur_ns=2_500_000,
            ),
        ],
    )

    assert main(["trace", "cat", str(path)]) == 0
    out, err = capsys.readouterr()

    assert out.splitlines() == [
        "2025-12-02T12:53:20.123Z a_1 lease.acquired lease=kube-system/pycm identity=a_1",
        "2025-12-02T12:53:20.124Z a_1 reconcile.end outcome=ok controller=deployment "
        "key=default/web result=requeue dur=2.5ms",
    ]
    assert err == ""


def test_trace_cat_kind_filter_accepts_names_and_patterns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    _record(path, [ItemAdded(key="a", ts=_T0), LeaseRenewed(lease="l", ts=_T0), *all_samples()])

    assert main(["trace", "cat", str(path), "--kind", "queue.add", "--kind", "lease.*"]) == 0
    kinds = [line.split()[2] for line in capsys.readouterr().out.splitlines()]

    assert kinds[:2] == ["queue.add", "lease.renewed"]
    assert set(kinds) == {"queue.add"} | {k for k in REGISTRY if k.startswith("lease.")}


def test_trace_cat_every_kind_prints_without_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    samples = all_samples()
    _record(path, samples)

    assert main(["trace", "cat", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()

    assert [line.split()[2] for line in lines] == [e.KIND for e in samples]
    assert all("\n" not in line for line in lines)  # text with newlines is quoted, not printed


def test_trace_cat_unknown_kind_is_shown_not_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"kind":"future.thing","ts":%d,"instance":"z","widgets":3}\n' % _T0)

    assert main(["trace", "cat", str(path)]) == 0
    assert capsys.readouterr().out == '2025-12-02T12:53:20.123Z z future.thing? {"widgets":3}\n'


def test_trace_cat_bad_lines_go_to_stderr_and_reading_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    good = encode(ItemAdded(key="k", ts=_T0))
    path.write_bytes(good + b"\ngarbage\n" + good + b"\n" + good[:30])

    assert main(["trace", "cat", str(path)]) == 0
    out, err = capsys.readouterr()

    assert len(out.splitlines()) == 2
    assert f"{path}:2: bad line: not JSON" in err
    assert f"{path}:4: truncated last line" in err
    assert "skipped 2 line(s)" in err
    assert "Traceback" not in err


def test_trace_cat_of_a_file_that_is_no_recording_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello\nworld\n")

    assert main(["trace", "cat", str(path)]) == 1
    out, err = capsys.readouterr()

    assert out == ""
    assert f"{path}: not a recording: none of its 2 line(s) is an event" in err
    assert "Traceback" not in err


def test_trace_cat_of_an_empty_recording_is_no_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"")  # a recorder that saw nothing yet

    assert main(["trace", "cat", str(path)]) == 0
    assert capsys.readouterr() == ("", "")


def test_trace_cat_rotated_reads_the_set_oldest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    _record(Path(f"{path}.1"), [ItemAdded(key="old", ts=_T0)])
    _record(path, [ItemAdded(key="new", ts=_T0)])

    assert main(["trace", "cat", "--rotated", str(path)]) == 0
    keys = [line.split()[-1] for line in capsys.readouterr().out.splitlines()]
    assert keys == ["key=old", "key=new"]
    assert len(list(read_events(path))) == 1  # without --rotated only the base file


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        pytest.param(lambda p: p / "missing.jsonl", "No such file or directory", id="missing"),
        pytest.param(lambda p: p, "Is a directory", id="directory"),
    ],
)
def test_trace_cat_unreadable_file_exits_1_with_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, reason: str
) -> None:
    target = make(tmp_path)  # type: ignore[operator]

    assert main(["trace", "cat", str(target)]) == 1
    out, err = capsys.readouterr()

    assert out == ""
    assert err == f"pycm trace cat: cannot read {target}: {reason}\n"


def test_trace_cat_without_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["trace", "cat"])
    assert exc.value.code == 2
    assert "FILE" in capsys.readouterr().err


def test_trace_without_subcommand_prints_help_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["trace"]) == 2
    err = capsys.readouterr().err
    assert "kinds" in err
    assert "cat" in err


def test_trace_command_import_pulls_in_no_ui_or_web_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pycm.trace.command; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('textual', 'starlette', 'uvicorn', 'opentelemetry', 'tui', 'web')); "
        "print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""
