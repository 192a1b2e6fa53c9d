"""The pytest plugin of :mod:`pycm.testing` (entry point ``pytest11: pycm``): its fixtures.

Loaded into every pytest run where pycm is installed, so it imports nothing heavy at import
time (the emulator, the manager, the clients are imported by the fixtures that use them), and
its fixture names all start with ``pycm_`` so that they never shadow a suite's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pycm.testing.cluster import Cluster
    from pycm.testing.manager import ManagerHandle


@pytest.fixture(scope="session")
def pycm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """An emulated cluster for the session (``pycm sim`` as a process)."""
    from pycm.testing.cluster import start_cluster

    cluster = start_cluster(tmp_path_factory.mktemp("pycm-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def pycm_kubeconfig(pycm_cluster: Cluster) -> Path:
    """The emulated cluster's admin kubeconfig."""
    return pycm_cluster.kubeconfig


@pytest.fixture
def pycm_namespace(pycm_cluster: Cluster) -> Iterator[str]:
    """A fresh namespace for the test, deleted after it."""
    with pycm_cluster.fresh_namespace() as name:
        yield name


@pytest.fixture
def pycm_manager(pycm_cluster: Cluster) -> Iterator[Callable[..., ManagerHandle]]:
    """``pycm_manager(controllers, descriptors=(), args=())``: a manager started in-process
    against the cluster; stopped after the test, which fails unless it exits 0."""
    from pycm.testing.manager import ManagerHandle

    started: list[ManagerHandle] = []

    def start(
        controllers: Sequence[str], *, descriptors: Sequence[Any] = (), args: Sequence[str] = ()
    ) -> ManagerHandle:
        handle = ManagerHandle(
            pycm_cluster.kubeconfig, controllers, descriptors=descriptors, args=args
        )
        handle.start()
        started.append(handle)
        pycm_cluster.histories.append(handle.history)
        return handle

    try:
        yield start
    finally:
        for handle in reversed(started):
            pycm_cluster.histories.remove(handle.history)
            handle.stop()
