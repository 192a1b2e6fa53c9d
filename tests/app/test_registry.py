"""The controller registry: duplicates rejected, and --controllers resolved as KCM scans it."""

from __future__ import annotations

import textwrap
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from pycm.app.registry import (
    BUILT_IN,
    IN_CODE,
    BrokenPlugin,
    ControllerDescriptor,
    PluginError,
    Registry,
    RegistryError,
    default_registry,
    load_plugins,
)


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


# -- sources, help, plugins, the built registry ----------------------------------------------


def test_register_conflict_message_names_both_sources() -> None:
    registry = Registry()
    registry.register(ControllerDescriptor("deployment", _init), source=BUILT_IN)
    with pytest.raises(RegistryError) as caught:
        registry.register(ControllerDescriptor("mine", _init, aliases=("deployment",)))
    assert str(caught.value) == (
        "controller name or alias 'deployment' is already registered (by 'deployment', built-in)"
    )


def test_describe_lists_all_then_off_by_default_then_plugins() -> None:
    registry = _registry()
    registry.register(
        ControllerDescriptor("echo", _init, enabled_by_default=False),
        source="distribution pycm-echo-controller 0.1.0",
    )
    assert registry.describe() == (
        "All controllers: bootstrap, deployment, echo, replicaset\n"
        "Disabled-by-default controllers: bootstrap, echo\n"
        "Plugin controllers: echo from distribution pycm-echo-controller 0.1.0"
    )
    assert registry.source("echo") == "distribution pycm-echo-controller 0.1.0"


def _installed(
    site: Path, module: str, source: str, *, entry: str = "mine", value: str | None = None
) -> list[Any]:
    """The entry points of a distribution really installed (dist-info) under ``site``."""
    info = site / f"{module}-2.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 2.0\n")
    value = value or f"{module}:descriptor"
    (info / "entry_points.txt").write_text(f"[pycm.controllers]\n{entry} = {value}\n")
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    (dist,) = metadata.distributions(path=[str(site)])
    return list(dist.entry_points.select(group="pycm.controllers"))


_GOOD_PLUGIN = """
from pycm.controller import ControllerDescriptor

async def init(ctx):
    return None

descriptor = ControllerDescriptor(
    "mine", init, aliases=("my-controller",), enabled_by_default=False
)
"""


def test_load_plugins_registers_descriptor_with_its_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = _installed(tmp_path, "pycm_test_plugin_good", _GOOD_PLUGIN)
    registry = load_plugins(_registry(), eps)
    assert registry.canonical("my-controller") == "mine"
    assert registry.source("mine") == "distribution pycm_test_plugin_good 2.0"
    assert registry.resolve(["*"])["mine"] is False
    assert registry.resolve(["*", "mine"])["mine"] is True


def test_load_plugins_import_error_names_distribution_and_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = _installed(tmp_path, "pycm_test_plugin_raises", "raise RuntimeError('no config')\n")
    message = (
        "plugin controller 'mine' (pycm_test_plugin_raises:descriptor) from distribution "
        "pycm_test_plugin_raises 2.0 failed to load: RuntimeError: no config"
    )
    with pytest.raises(PluginError) as caught:
        load_plugins(_registry(), eps, strict=True)
    assert str(caught.value) == message
    # Not strict (what pycm run does): kept aside, the rest of the registry intact.
    registry = load_plugins(_registry(), eps)
    assert registry.broken == [
        BrokenPlugin("mine", "distribution pycm_test_plugin_raises 2.0", message)
    ]
    assert registry.names() == ["bootstrap", "deployment", "replicaset"]


@pytest.mark.parametrize(
    ("module", "source", "value", "message"),
    [
        pytest.param(
            "pycm_test_plugin_exits",
            "import sys\nsys.exit(3)\n",
            None,
            "plugin controller 'mine' (pycm_test_plugin_exits:descriptor) from distribution "
            "pycm_test_plugin_exits 2.0 failed to load: SystemExit: 3",
            id="sys-exit-at-import",
        ),
        pytest.param(
            "pycm_test_plugin_malformed",
            _GOOD_PLUGIN,
            "pycm_test_plugin_malformed:",
            "plugin controller 'mine' (pycm_test_plugin_malformed:) from distribution "
            "pycm_test_plugin_malformed 2.0: the entry point is not 'module:attribute'",
            id="malformed-entry-point",
        ),
    ],
)
def test_load_plugins_exit_or_malformed_entry_point_is_a_plugin_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    source: str,
    value: str | None,
    message: str,
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = _installed(tmp_path, module, source, value=value)
    with pytest.raises(PluginError) as caught:
        load_plugins(_registry(), eps, strict=True)
    assert str(caught.value) == message
    assert [b.message for b in load_plugins(_registry(), eps).broken] == [message]


def test_broken_plugin_is_an_error_only_when_named_else_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = _installed(tmp_path / "a", "pycm_test_plugin_gone", "import no_such_mod_xyz\n")
    good = _installed(tmp_path / "b", "pycm_test_plugin_fine", _GOOD_PLUGIN, entry="fine")
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    registry = load_plugins(_registry(), [*broken, *good])
    # The healthy plugin beside it loaded.
    assert registry.canonical("my-controller") == "mine"
    (failure,) = registry.broken
    assert failure.message.startswith("plugin controller 'mine' (pycm_test_plugin_gone:")
    # (Its entry point's name, "mine", is also the healthy plugin's controller's: registered
    # names win, so naming it is no error.)
    assert registry.validate(["mine"]) == []
    registry.broken.append(BrokenPlugin("gone", "distribution x 1", "plugin 'gone' failed"))
    assert registry.validate(["deployment", "gone"]) == ["plugin 'gone' failed"]
    assert registry.validate(["*", "-gone"]) == []
    assert registry.warnings(["deployment"]) == [
        f"{failure.message} (its controllers are not available; the others run)",
        "plugin 'gone' failed (its controllers are not available; the others run)",
    ]
    assert registry.warnings(["*", "gone"])[1:] == []
    assert registry.describe().endswith(
        "Plugins that failed to load: mine from distribution pycm_test_plugin_gone 2.0, "
        "gone from distribution x 1"
    )


def test_broken_entry_point_leaves_its_distributions_healthy_one_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One distribution, two entry points, one broken: the healthy controller of the same
    distribution loads and is listed; only the broken entry point is named as failed."""
    monkeypatch.syspath_prepend(str(tmp_path))
    info = tmp_path / "pycm_test_pair-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pycm-test-pair\nVersion: 2.0\n")
    (info / "entry_points.txt").write_text(
        "[pycm.controllers]\n"
        "gone = pycm_test_pair_gone:descriptor\n"
        "mine = pycm_test_pair_fine:descriptor\n"
    )
    (tmp_path / "pycm_test_pair_fine.py").write_text(textwrap.dedent(_GOOD_PLUGIN))
    (tmp_path / "pycm_test_pair_gone.py").write_text("import no_such_mod_xyz\n")
    (dist,) = metadata.distributions(path=[str(tmp_path)])
    registry = load_plugins(_registry(), dist.entry_points.select(group="pycm.controllers"))
    assert registry.source("mine") == "distribution pycm-test-pair 2.0"
    assert [(b.name, b.origin) for b in registry.broken] == [
        ("gone", "distribution pycm-test-pair 2.0")
    ]
    assert registry.resolve(["deployment", "mine"])["mine"] is True
    help_lines = registry.describe().splitlines()
    assert help_lines[-2:] == [
        "Plugin controllers: mine from distribution pycm-test-pair 2.0",
        "Plugins that failed to load: gone from distribution pycm-test-pair 2.0",
    ]


def test_build_registry_builtins_then_in_code_then_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pycm.app import controllers

    in_code = Registry()
    in_code.register(ControllerDescriptor("embedded", _init))
    monkeypatch.setattr(controllers, "default_registry", lambda: in_code)
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = _installed(tmp_path, "pycm_test_plugin_built", _GOOD_PLUGIN)
    registry = controllers.build_registry(entry_points=eps)
    assert registry.names() == ["deployment", "embedded", "mine", "replicaset"]
    assert [registry.source(n) for n in registry.names()] == [
        BUILT_IN,
        IN_CODE,
        "distribution pycm_test_plugin_built 2.0",
        BUILT_IN,
    ]
    # Building again gives a fresh registry: nothing accumulates across builds.
    assert controllers.build_registry(plugins=False).names() == [
        "deployment",
        "embedded",
        "replicaset",
    ]


def test_build_registry_no_plugins_only_builtins_importing_registers_nothing() -> None:
    import pycm.app.controllers  # noqa: F401 - importing must not register anything

    assert "deployment" not in default_registry()
