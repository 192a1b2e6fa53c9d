"""The controller context's own behaviour: background runnables and queue registration."""

from __future__ import annotations

from typing import Any

from pycm.controller import ControllerContext


def _context() -> ControllerContext:
    unused: Any = None
    return ControllerContext(
        config=None,
        bus=unused,
        clock=unused,
        client_for=unused,
        recorder_for=unused,
        informer_factory=unused,
        metadata_informer_factory=unused,
    )


async def _task() -> None:
    return None


def test_context_add_runnable_before_takeover_pending_after_handed_on() -> None:
    ctx = _context()
    ctx.add_runnable("early", _task)
    assert ctx.pending_runnables == [("early", _task)]
    handed: list[str] = []
    ctx.on_runnable = lambda name, run: handed.append(name)
    ctx.add_runnable("late", _task)
    assert handed == ["late"]
    assert ctx.pending_runnables == [("early", _task)]  # the manager drains these itself
