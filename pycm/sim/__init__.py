"""The embedded Kubernetes API emulator.

It stands in for a cluster in tests, the demo and benchmarks: an in-memory kube-apiserver for
namespaces, nodes, pods, events, configmaps (core/v1), deployments and replicasets (apps/v1),
leases (coordination.k8s.io/v1), TokenReviews and SubjectAccessReviews — with kube's metadata,
status-subresource, optimistic-concurrency, selector, pagination, watch, table and
metadata-only semantics, and the garbage collector's cascading deletion. It imports nothing of
the manager (an import-linter contract), so it stays an independent peer.

Public surface:

- :func:`run_emulator` / :class:`Emulator` (``.url``, ``.kubeconfig_path``, ``.admin_token``,
  ``.store``, ``.app``, ``.before_request``, ``.add_runnable``) and :class:`EmulatorOptions`.
- :class:`Store` — the in-process API (``get / peek / list / create / update / update_status /
  patch / delete / delete_collection / watch / finalize_pod_deletion / compact /
  drop_watches``) with :class:`DeleteOptions`; kinds via ``store.resource("pods")``.
- :class:`Kubelet` / :class:`KubeletOptions` — the simulated kubelet (``emu.kubelet``, with
  ``kubelet=True``) and :class:`Faults` / :class:`Fault` — fault injection (``emu.faults``,
  ``/sim/v1/faults``); see docs/sim.md.
- ``pycm sim`` — :mod:`pycm.sim.command`.

Where it knowingly differs from kube-apiserver (each a simplification a client cannot rely on
either way, or one named in the module that makes it):

- Lists are served from the latest state whatever ``resourceVersion`` / ``resourceVersionMatch``
  ask; a continued list reads the current state after the token's key (no snapshot) and
  carries the token's resourceVersion, so a watch from it replays what changed meanwhile.
- Garbage collection runs synchronously inside the deleting request; Foreground deletion waits
  for every dependent, not only those with ``blockOwnerDeletion`` (:mod:`pycm.sim.gc`).
- ``dryRun`` is refused (400) rather than ignored; server-side apply is not served (415);
  protobuf is not served (a client's next Accept entry is used).
- Request options are validated as kube validates them, with its codes and messages
  (:mod:`pycm.sim.listoptions`, :mod:`pycm.sim.writeoptions`, :mod:`pycm.sim.selectors`), but
  a watch without ``timeoutSeconds`` never times out, a streaming list (``sendInitialEvents``,
  :mod:`pycm.sim.watchlist`) newer than the emulator's version is refused at once rather than
  after kube's 3 s wait, and bodies nest at most 100 levels, not 10,000
  (:data:`pycm.sim.objects.MAX_DEPTH` says why).
- Items of a list keep their ``kind`` and ``apiVersion``.
- ``metadata.managedFields`` are recorded for every create, update and patch as kube's field
  manager records non-apply writes, with list and map types taken from field names rather
  than the OpenAPI schema (:mod:`pycm.sim.managedfields` names each simplification).
- Pod updates are checked less strictly than kube (container names and a bound ``nodeName``
  are immutable; the rest of the spec may change). Admission is NamespaceLifecycle only.
- Pods with a grace period are removed at once unless ``graceful_pod_deletion`` is on (then
  they wait for :meth:`Store.finalize_pod_deletion`, the kubelet's confirmation).
- Its defaults are a cluster's: HTTPS (client-go, so kubectl, sends kubeconfig credentials only
  over TLS) and the simulated kubelet; ``tls=False`` / ``kubelet=False`` (``--insecure-http``,
  ``--kubelet off``) turn them off, and tests state both.

Module map: resources (the registry of kinds), store (table: one kind's objects in key order;
servermeta: the metadata the server owns and write preconditions; deletion), managedfields
(fieldset: the FieldsV1 set algebra; fieldcompare: the fields a write changes; listrules),
watch, gc, selectors, validation, defaults, shape, patch, scale, history, tables, discovery,
negotiation, watchlist, watchlag, requestinfo, listoptions, writeoptions, gostrconv (Go's
parsing and its messages), bodies, handlers (reads: get, list, watch; responses;
apicontext), app, auth, reviews, kubeconfig, certs, seed,
options, server, command; the kubelet/ package (loop, podstatus, nodes, options) and the
faults/ package (fault, kinds, active, endpoint).

Exceptions::

    Exception
     ├── APIError        every failure the API answers with (a v1 Status; pycm.sim.errors)
     ├── RuntimeError
     │    └── EmulatorError   the emulator cannot start (port in use, unreadable file)
     └── ValueError
          └── AuthError       an unreadable or malformed token or policy file
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pycm.sim.auth import AuthError
    from pycm.sim.errors import APIError
    from pycm.sim.faults import Fault, Faults
    from pycm.sim.gc import DeleteOptions
    from pycm.sim.kubelet import Kubelet, KubeletOptions
    from pycm.sim.options import EmulatorOptions
    from pycm.sim.server import Emulator, EmulatorError, Runnable, run_emulator
    from pycm.sim.store import Store

# Loaded on first use: `pycm` imports the sim command for every subcommand, and uvicorn,
# starlette and cryptography are worth ~100 ms that `pycm top` should not pay.
_EXPORTS = {
    "APIError": "pycm.sim.errors",
    "AuthError": "pycm.sim.auth",
    "DeleteOptions": "pycm.sim.gc",
    "Emulator": "pycm.sim.server",
    "EmulatorError": "pycm.sim.server",
    "EmulatorOptions": "pycm.sim.options",
    "Fault": "pycm.sim.faults",
    "Faults": "pycm.sim.faults",
    "Kubelet": "pycm.sim.kubelet",
    "KubeletOptions": "pycm.sim.kubelet",
    "Runnable": "pycm.sim.server",
    "Store": "pycm.sim.store",
    "run_emulator": "pycm.sim.server",
}

__all__ = [
    "APIError",
    "AuthError",
    "DeleteOptions",
    "Emulator",
    "EmulatorError",
    "EmulatorOptions",
    "Fault",
    "Faults",
    "Kubelet",
    "KubeletOptions",
    "Runnable",
    "Store",
    "run_emulator",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pycm.sim' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
