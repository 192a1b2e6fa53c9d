"""The built-in controllers are declared as plugins are: a descriptor in their own package,
listed on one line each in pycm.app.controllers, whose init (through the manager's
init_controller) builds the controller with a ControllerBuilder."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from pycm.app.controller_init import init_controller
from pycm.app.controllers import BUILT_INS, build_registry
from pycm.app.features import FEATURE_GATES
from pycm.app.registry import BUILT_IN
from pycm.controllers.deployment import descriptor as deployment
from pycm.controllers.replicaset import descriptor as replicaset
from pycm.kube.resources import DEPLOYMENTS, PODS, REPLICASETS
from tests.app.test_priority_queue_flag import _completed, _context


def test_builtins_are_their_packages_descriptors_registered_as_built_in() -> None:
    assert BUILT_INS == (deployment.DESCRIPTOR, replicaset.DESCRIPTOR)
    registry = build_registry(plugins=False)
    assert [(d.name, d.aliases, registry.source(d.name)) for d in registry] == [
        ("deployment", ("deployment-controller",), BUILT_IN),
        ("replicaset", ("replicaset-controller",), BUILT_IN),
    ]
    # KCM's maxRetries, from the descriptor as a plugin's would be.
    assert [d.max_retries for d in BUILT_INS] == [15, 15]


@pytest.mark.parametrize("package", [deployment, replicaset], ids=["deployment", "replicaset"])
def test_builtin_feature_gates_are_gates_the_manager_knows(package: object) -> None:
    gates = package.FEATURE_GATES  # type: ignore[attr-defined]
    assert gates
    assert [g for g in gates if g not in FEATURE_GATES] == []


@pytest.mark.asyncio
async def test_builtin_init_builds_through_the_builder_with_descriptor_retries() -> None:
    ctx = _context(_completed([]), CollectorRegistry())
    failures: list[str] = []
    for descriptor in BUILT_INS:
        run = await init_controller(
            ctx,
            descriptor,
            who=f"controller {descriptor.name!r}",
            bus=ctx.bus,
            fail=failures.append,
            stopping=lambda: False,
        )
        assert callable(run)
    assert failures == []
    assert {name: c.max_retries for name, c in ctx.queues.items()} == {
        "deployment": 15,
        "replicaset": 15,
    }
    factory = ctx.informer_factory
    handlers = {
        r.resource: [reg.name for reg in factory.informer_for(r).registrations]
        for r in (DEPLOYMENTS, REPLICASETS, PODS)
    }
    # The builder's handler names (controller/resource), one per watch.
    assert handlers == {
        "deployments": ["deployment/deployments"],
        "replicasets": ["deployment/replicasets", "replicaset/replicasets"],
        "pods": ["deployment/pods", "replicaset/pods"],
    }
