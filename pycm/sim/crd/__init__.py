"""CustomResourceDefinitions in the emulator (``apiextensions.k8s.io/v1``).

Modules, one concept each:

- :mod:`~pycm.sim.crd.definition` — a CRD object's defaults and validation (names, scope,
  versions, subresources, printer columns; immutable fields on update);
- :mod:`~pycm.sim.crd.structural` — is a version's ``openAPIV3Schema`` acceptable (kube's API
  rules, the structural invariants, the emulator's bounds on hostile schemas);
- :mod:`~pycm.sim.crd.schema` — the compiled structural schema a custom resource is checked by;
- :mod:`~pycm.sim.crd.validate_schema` — a custom resource against its schema (kube's causes);
- :mod:`~pycm.sim.crd.prune`, :mod:`~pycm.sim.crd.default` — unknown fields dropped, defaults
  applied, on every write;
- :mod:`~pycm.sim.crd.regex` — the linear-time matcher behind ``pattern:`` (Go's RE2 syntax);
- :mod:`~pycm.sim.crd.causes` — apimachinery's field errors in kube's wording.
"""
