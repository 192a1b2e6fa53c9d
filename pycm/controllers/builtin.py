"""What every built-in controller's init does the same way: its builder, its settings.

A built-in's builder differs from a plugin's default in two of KCM's ways: its queue is KCM's
FIFO unless ``--controller-priority-queue`` is on, and it asks discovery nothing (the kinds
the built-ins watch, apps/v1 and v1, are served by every API server).
"""

from __future__ import annotations

from pycm.controller import ControllerBuilder, ControllerContext

__all__ = ["built_in_builder", "feature_enabled"]


def built_in_builder(ctx: ControllerContext, name: str, *, workers: int) -> ControllerBuilder:
    """The builder of the built-in ``name`` (retries: its descriptor's, KCM's 15)."""
    return ControllerBuilder(
        ctx,
        name,
        workers=workers,
        priority_queue=ctx.config.controllers.priority_queue,
        check_served=False,
    )


def feature_enabled(ctx: ControllerContext, gate: str) -> bool:
    """Whether the manager's feature gate ``gate`` is on (``ctx.config`` is the manager's
    CompletedConfig, typed Any below pycm.app; pycm.app.features declares the gates)."""
    return bool(ctx.config.feature_gates.enabled(gate))
