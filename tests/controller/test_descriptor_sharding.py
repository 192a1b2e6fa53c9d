"""A controller descriptor's ``sharding``: namespace (the default) or singleton, nothing else."""

from __future__ import annotations

import pytest

from pycm.controller import ControllerDescriptor
from pycm.controller.descriptor import SHARD_BY_NAMESPACE, SINGLETON


async def _init(ctx: object) -> None:
    return None


def test_default_is_sharded_by_namespace_and_singleton_is_accepted() -> None:
    assert ControllerDescriptor("echo", _init).sharding == SHARD_BY_NAMESPACE
    assert ControllerDescriptor("gc", _init, sharding=SINGLETON).sharding == "singleton"


def test_unknown_sharding_is_refused_naming_the_controller() -> None:
    with pytest.raises(
        ValueError,
        match="controller 'echo': sharding must be one of namespace, singleton, got 'uid'",
    ):
        ControllerDescriptor("echo", _init, sharding="uid")
