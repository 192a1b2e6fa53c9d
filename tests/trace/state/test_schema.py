"""The snapshot's declared schema: real snapshots have exactly its keys and types, and
docs/state.md (generated from it) is current."""

from __future__ import annotations

import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any, get_args, get_origin, is_typeddict

import orjson
from hypothesis import given, settings

from pycm.trace.events import Event
from pycm.trace.state import SNAPSHOT_VERSION, Snapshot, State
from pycm.trace.state.doc import fields_of, render_markdown, typeddicts
from tests.trace.kind_samples import all_samples
from tests.trace.state.script import streams

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "state.md"


def mismatches(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Where ``value`` does not have the declared type ``tp`` (TypedDict keys exactly)."""
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__}, not an object"]
        declared = fields_of(tp)
        out = [f"{path}.{k}: not declared" for k in value if k not in declared]
        out += [f"{path}.{k}: missing" for k in declared if k not in value]
        for k, (ftp, _) in declared.items():
            if k in value:
                out += mismatches(value[k], ftp, f"{path}.{k}")
        return out
    origin, args = get_origin(tp), get_args(tp)
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        return [m for k, v in value.items() for m in mismatches(v, args[1], f"{path}[{k!r}]")]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        return [m for i, v in enumerate(value) for m in mismatches(v, args[0], f"{path}[{i}]")]
    if origin in (types.UnionType, typing.Union):
        if any(not mismatches(value, a, path) for a in args):
            return []
        return [f"{path}: {value!r} is none of {tp}"]
    if tp is type(None):
        return [] if value is None else [f"{path}: {value!r} is not null"]
    if tp is Any:
        return []
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, tp)
    return [] if ok else [f"{path}: {value!r} is not {tp.__name__}"]


def test_schema_mismatches_reports_missing_extra_and_wrong_types() -> None:
    snap: Any = State().snapshot()
    assert mismatches(snap, Snapshot) == []
    snap["counters"]["applied"] = "3"
    del snap["now_ts"]
    snap["extra"] = 1
    assert sorted(mismatches(snap, Snapshot)) == [
        "$.counters.applied: '3' is not int",
        "$.extra: not declared",
        "$.now_ts: missing",
    ]


def test_schema_snapshot_of_every_kind_has_exactly_the_declared_fields() -> None:
    state = State()
    state.apply_all(all_samples())
    snap = state.snapshot()
    assert snap["v"] == SNAPSHOT_VERSION
    # every section is populated, so every nested TypedDict is checked
    assert all(snap[k] for k in ("instances", "leases", "informers", "controllers", "queues"))
    assert mismatches(snap, Snapshot) == []
    assert mismatches(orjson.loads(orjson.dumps(snap)), Snapshot) == []


@settings(max_examples=50, deadline=None)
@given(streams())
def test_schema_random_stream_snapshot_conforms_and_round_trips(events: list[Event]) -> None:
    state = State()
    state.apply_all(events)
    wire = orjson.loads(orjson.dumps(state.snapshot()))
    assert mismatches(wire, Snapshot) == []
    assert State.restore(wire).snapshot() == wire


def test_schema_restore_of_a_snapshot_without_v_still_works() -> None:
    state = State()
    state.apply_all(all_samples())
    wire = orjson.loads(orjson.dumps(state.snapshot()))
    del wire["v"]  # a snapshot written before the version was declared
    assert State.restore(wire).snapshot()["counters"] == state.snapshot()["counters"]


def test_schema_every_typeddict_field_is_documented() -> None:
    undocumented = [
        f"{td.__name__}.{name}"
        for td in typeddicts()
        for name, (_, meaning) in fields_of(td).items()
        if not meaning
    ]
    assert undocumented == []


def test_state_doc_matches_the_schema() -> None:
    committed = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert committed == render_markdown(), "docs/state.md is stale: run make state-doc"


def test_trace_schema_command_prints_the_state_doc() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pycm", "trace", "schema"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == render_markdown()
