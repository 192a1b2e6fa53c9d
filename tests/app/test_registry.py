"""The controller registry: duplicates rejected, and --controllers resolved as KCM scans it."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.app.registry import ControllerDescriptor, Registry, RegistryError


async def _init(_: Any) -> None:
    return None


def _registry() -> Registry:
    registry = Registry()
    registry.register(ControllerDescriptor("deployment", _init, aliases=("deployment-controller",)))
    registry.register(ControllerDescriptor("replicaset", _init, aliases=("replicaset-controller",)))
    registry.register(ControllerDescriptor("bootstrap", _init, enabled_by_default=False))
    return registry


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param(
            ["*"], {"deployment": True, "replicaset": True, "bootstrap": False}, id="star"
        ),
        pytest.param(
            ["*", "-replicaset"],
            {"deployment": True, "replicaset": False, "bootstrap": False},
            id="star-minus",
        ),
        pytest.param(
            ["-replicaset", "*"],
            {"deployment": True, "replicaset": False, "bootstrap": False},
            id="minus-first-wins",
        ),
        pytest.param(
            ["deployment"], {"deployment": True, "replicaset": False, "bootstrap": False}, id="one"
        ),
        pytest.param(
            ["bootstrap", "*"],
            {"deployment": True, "replicaset": True, "bootstrap": True},
            id="opt-in-by-name",
        ),
        pytest.param(
            ["replicaset-controller"],
            {"deployment": False, "replicaset": True, "bootstrap": False},
            id="alias",
        ),
        pytest.param(
            ["*", "-deployment-controller"],
            {"deployment": False, "replicaset": True, "bootstrap": False},
            id="minus-alias",
        ),
        pytest.param([], {"deployment": False, "replicaset": False, "bootstrap": False}, id="none"),
    ],
)
def test_resolve_first_match_decides(items: list[str], expected: dict[str, bool]) -> None:
    assert _registry().resolve(items) == expected


def test_validate_reports_every_unknown_name() -> None:
    errors = _registry().validate(["*", "nope", "-gone", "deployment"])
    assert len(errors) == 2
    assert '"nope" is not in the list of known controllers' in errors[0]
    assert '"gone"' in errors[1]
    with pytest.raises(RegistryError):
        _registry().resolve(["nope"])


@pytest.mark.parametrize(
    "descriptor",
    [
        pytest.param(ControllerDescriptor("deployment", _init), id="duplicate-name"),
        pytest.param(
            ControllerDescriptor("other", _init, aliases=("replicaset",)), id="alias=name"
        ),
        pytest.param(
            ControllerDescriptor("x", _init, aliases=("deployment-controller",)),
            id="duplicate-alias",
        ),
        pytest.param(ControllerDescriptor("-x", _init), id="leading-dash"),
        pytest.param(ControllerDescriptor("*", _init), id="star"),
    ],
)
def test_register_rejects_conflicts(descriptor: ControllerDescriptor) -> None:
    registry = _registry()
    with pytest.raises(RegistryError):
        registry.register(descriptor)
    assert len(registry) == 3


def test_lookup_by_alias_returns_the_canonical_descriptor() -> None:
    registry = _registry()
    assert registry.get("deployment-controller").name == "deployment"
    assert registry.canonical("replicaset-controller") == "replicaset"
    assert "deployment-controller" in registry
    assert registry.names() == ["bootstrap", "deployment", "replicaset"]
