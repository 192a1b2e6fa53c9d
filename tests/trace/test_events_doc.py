"""docs/events.md is generated from the registry; this test keeps the committed copy current."""

from __future__ import annotations

from pathlib import Path

from pycm.trace.eventdoc import render_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def test_events_doc_matches_the_registry() -> None:
    committed = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert committed == render_markdown(), "docs/events.md is stale: run make events-doc"
