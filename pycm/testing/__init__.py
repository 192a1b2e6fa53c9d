"""``pycm.testing``: test your controller against an emulated cluster with plain pytest.

Installed with pycm and registered as a pytest plugin (entry point ``pytest11``), so its
fixtures are there in any suite once pycm is installed — nothing to import or configure:

- ``pycm_cluster`` (session) — a :class:`Cluster`: ``pycm sim`` as a process (HTTPS, the
  simulated kubelet on), ``kubeconfig`` (the admin's), ``api_client`` / ``dynamic`` (the
  official ``kubernetes`` clients), ``apply(yaml)`` (CRDs included: waited for until
  its kind is served), ``get`` / ``delete``, ``wait_for_object``;
- ``pycm_kubeconfig`` — its kubeconfig path;
- ``pycm_namespace`` — a fresh namespace per test, deleted after it;
- ``pycm_manager`` — ``pycm_manager(["website"], descriptors=[...], args=[...])`` starts a
  manager in-process (leader election off) running the controllers named, waits until they
  run, and stops it cleanly after the test (a non-zero exit fails the test).

And :func:`wait_for` (``wait_for(predicate, timeout)``), whose failure says what it last saw;
``pycm_cluster.wait_for_object(...)`` adds the object's last state and its history in the
running managers (the reconciles that touched it, and why). docs/controllers.md, "Testing your
controller", walks through a suite.
"""

from pycm.testing.cluster import Cluster, ClusterError, start_cluster
from pycm.testing.manager import ManagerError, ManagerHandle
from pycm.testing.waiting import WaitTimeout, wait_for

__all__ = [
    "Cluster",
    "ClusterError",
    "ManagerError",
    "ManagerHandle",
    "WaitTimeout",
    "start_cluster",
    "wait_for",
]
