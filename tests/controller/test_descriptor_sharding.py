"""A controller descriptor's ``sharding``: namespace (the default), uid or singleton, nothing
else."""

from __future__ import annotations

import pytest

from pycm.controller import ControllerDescriptor
from pycm.controller.descriptor import SHARD_BY_NAMESPACE, SHARD_BY_UID, SINGLETON


async def _init(ctx: object) -> None:
    return None


def test_default_is_sharded_by_namespace_and_uid_and_singleton_are_accepted() -> None:
    assert ControllerDescriptor("echo", _init).sharding == SHARD_BY_NAMESPACE
    assert ControllerDescriptor("gc", _init, sharding=SINGLETON).sharding == "singleton"
    assert ControllerDescriptor("leases", _init, sharding=SHARD_BY_UID).sharding == "uid"


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("name", id="an-unknown-field"),
        pytest.param("UID", id="case-matters"),
        pytest.param("object.metadata.uid", id="the-selector-field-path-is-not-the-flag"),
    ],
)
def test_unknown_sharding_is_refused_naming_the_controller(value: str) -> None:
    with pytest.raises(ValueError) as caught:
        ControllerDescriptor("echo", _init, sharding=value)
    assert str(caught.value) == (
        f"controller 'echo': sharding must be one of namespace, uid, singleton, got {value!r}"
    )
