"""CustomResourceDefinitions in the emulator (``apiextensions.k8s.io/v1``).

How a CRD becomes a served resource: the CRD kind's strategy (:mod:`.kind`) checks its JSON
shape (:mod:`.shape`), defaults and validates it (:mod:`.definition`, :mod:`.structural`); once
stored, the controller (:mod:`.controller`) sets its conditions (:mod:`.names`) and serves each
served version through the store with a :class:`~.strategy.CustomResourceStrategy`, which
prunes (:mod:`.prune`), defaults (:mod:`.default`) and validates (:mod:`.validate_schema`) every
custom resource by the compiled schema (:mod:`.schema`), prints its table (:mod:`.printer`,
:mod:`.jsonpath`) and maps its scale paths. Requests through a non-storage version are answered
by the storage version and rewritten (:mod:`.conversion`).

Modules, one concept each:

- :mod:`.kind`, :mod:`.shape`, :mod:`.definition` — the CRD object: strategy, decoding, rules;
- :mod:`.structural` — is a version's ``openAPIV3Schema`` acceptable (kube's API rules, the
  structural invariants, the emulator's bounds on hostile schemas);
- :mod:`.names`, :mod:`.controller` — conditions, serving and unserving;
- :mod:`.schema`, :mod:`.validate_schema`, :mod:`.prune`, :mod:`.default` — a custom resource
  against its schema, with kube's causes;
- :mod:`.strategy`, :mod:`.printer`, :mod:`.jsonpath`, :mod:`.conversion` — serving one;
- :mod:`.regex_syntax`, :mod:`.regex` — ``pattern:`` in Go's RE2 syntax, matched in linear time;
- :mod:`.causes` — apimachinery's field errors in kube's wording;
- :mod:`.served` — ``served_versions(registry)``: each served version with its group, kind,
  plural, scope and schema, for the OpenAPI documents.
"""
