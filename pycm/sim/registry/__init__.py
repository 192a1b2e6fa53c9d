"""Per-kind strategies, as kube-apiserver's ``pkg/registry/<group>/<kind>/strategy.go``.

The store (:mod:`pycm.sim.store`) is generic: it keeps objects, resourceVersions, watches,
preconditions, managedFields, owner references and namespaces the same way for every kind.
Everything a kind does differently is its :class:`~pycm.sim.registry.strategy.Strategy`,
carried by its :class:`~pycm.sim.resources.Resource`: defaults, preparing a create or update
(status reset, spec reset on ``/status``), validation, generation, table columns, field
selectors, pruning, graceful deletion, TTL. One module per kind (or per family sharing rules):
:mod:`.pods`, :mod:`.namespaces`, :mod:`.events`, :mod:`.workloads` (Deployment, ReplicaSet),
:mod:`.rbac` (roles and bindings), :mod:`.plain` (the kinds with at most a validator).

How a custom resource plugs in (what a CustomResourceDefinition's controller does):

1. Write a strategy for it: a :class:`Strategy` subclass whose ``check_shape``/``prune``/
   ``default``/``validate`` follow the CRD version's ``openAPIV3Schema`` (types, defaults,
   unknown fields), whose ``printer`` is built from ``additionalPrinterColumns``
   (:class:`pycm.sim.tables.Printer`), with ``status_subresource`` and ``generation_on_spec``
   as the CRD declares (kube bumps a custom resource's generation on any change outside
   ``metadata`` and ``status``: override ``generation_changed``).
2. Build a :class:`~pycm.sim.resources.Resource` per served version (the storage version
   first) with that strategy, its names, scope, verbs and subresources (``status``,
   ``scale``), and hand each to ``store.serve(resource)``: discovery, routing, list, watch and
   selectors serve it at once.
3. ``store.unserve(group, plural)`` removes its objects (DELETED to every watcher), ends its
   watches and stops serving it.
"""

from __future__ import annotations

from pycm.sim.registry.strategy import Strategy

__all__ = ["Strategy"]
