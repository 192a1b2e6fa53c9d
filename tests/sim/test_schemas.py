"""The emulator's schemas declare exactly the fields of Kubernetes' Go types — checked against
the installed ``kubernetes`` client's models (generated from the API's OpenAPI) — so pruning
never drops a field a real cluster keeps; and nothing this repository writes is pruned."""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import orjson
import pytest
import yaml

from pycm.sim.pruning import prune_unknown_fields
from pycm.sim.schemas import KINDS, Field, Kept, ListOf, Struct

ROOT = Path(__file__).resolve().parents[2]
# Each kind's model in the client (core/v1 Event is CoreV1Event there).
MODELS = {kind: f"V1{kind}" for kind in KINDS} | {
    "Event": "CoreV1Event",
    "HorizontalPodAutoscaler": "V2HorizontalPodAutoscaler",  # served at autoscaling/v2
    "LeaseCandidate": "V1beta1LeaseCandidate",  # served at coordination.k8s.io/v1beta1
}
# Alpha fields behind an emulator feature gate that the client's models (API release-1.37)
# do not carry: KEP-5882's Deployment spec.podReplacementPolicy (gate
# DeploymentPodReplacementPolicy, kube's feature-gate list: alpha from 1.36).
GATED_FIELDS = {"Deployment.spec": {"podReplacementPolicy"}}
_SCALARS = {"str", "int", "bool", "float", "datetime", "date", "object", "bytes"}
_LIST = re.compile(r"^List\[(.+)\]$")


def _model(name: str) -> Any:
    return getattr(kubernetes.client, name)


def _check(field: Field, openapi_type: str, path: str, errors: list[str]) -> None:
    """``field`` (as declared at ``path``) against the client's type for it."""
    item = _LIST.match(openapi_type)
    model = item.group(1) if item else openapi_type
    is_model = model not in _SCALARS and not model.startswith("Dict[")
    if isinstance(field, ListOf):
        if not (item and is_model):
            errors.append(f"{path}: declared a list of structs, the API has {openapi_type}")
        else:
            _check_struct(field.item, model, path + "[]", errors)
    elif isinstance(field, dict):
        if item or not is_model:
            errors.append(f"{path}: declared a struct, the API has {openapi_type}")
        else:
            _check_struct(field, model, path, errors)
    elif field is Kept.MAP:
        if not openapi_type.startswith("Dict["):
            errors.append(f"{path}: declared a map, the API has {openapi_type}")
    elif field is Kept.LEAF:
        if is_model:
            errors.append(f"{path}: declared a leaf, the API has {openapi_type} (OPAQUE?)")
    elif not is_model:
        errors.append(f"{path}: declared opaque, the API has {openapi_type} (LEAF or MAP?)")


def _check_struct(struct: Struct, model_name: str, path: str, errors: list[str]) -> None:
    model = _model(model_name)
    types = {model.attribute_map[a]: model.openapi_types[a] for a in model.attribute_map}
    missing = sorted(set(types) - set(struct))
    if missing:
        errors.append(f"{path} ({model_name}): the API has {missing}, not declared: pruned!")
    invented = sorted(set(struct) - set(types) - GATED_FIELDS.get(path, set()))
    if invented:
        errors.append(f"{path} ({model_name}): declared {invented}, the API has no such field")
    for name in sorted(set(struct) & set(types)):
        _check(struct[name], types[name], f"{path}.{name}", errors)


def test_schemas_match_the_apis_models_field_for_field() -> None:
    errors: list[str] = []
    for kind, struct in KINDS.items():
        _check_struct(struct, MODELS[kind], kind, errors)
    assert errors == []


def test_schemas_check_catches_a_missing_field() -> None:
    # The check above could pass vacuously; it does not: a struct short of one field fails.
    errors: list[str] = []
    pod = copy.copy(KINDS["Pod"])
    spec = dict(pod["spec"])  # type: ignore[arg-type]
    del spec["hostUsers"]
    pod["spec"] = spec
    _check_struct(pod, "V1Pod", "Pod", errors)
    assert errors == ["Pod.spec (V1PodSpec): the API has ['hostUsers'], not declared: pruned!"]


# ---------------------------------------------------------------- what the repository writes


def _manifests() -> list[Any]:
    docs: list[Any] = []
    for path in sorted((ROOT / "deploy" / "kubernetes").rglob("*.yaml")):
        docs += [
            d
            for d in yaml.safe_load_all(path.read_text())
            if isinstance(d, dict) and d.get("kind") in KINDS
        ]
    return docs


def _bench_objects() -> list[Any]:
    from bench import sim, sim_memory
    from bench.informers import TEMPLATES, realistic_pod

    pods = [realistic_pod(i) for i in range(TEMPLATES)]
    return [*pods, orjson.loads(sim._pod("a")), orjson.loads(sim_memory._pod("b"))]


def test_schemas_keep_every_field_of_the_repos_manifests_and_bench_objects() -> None:
    objects = _manifests() + _bench_objects()
    assert {o["kind"] for o in objects} >= {"Deployment", "Pod", "Namespace", "ServiceAccount"}
    for obj in objects:
        kept = copy.deepcopy(obj)
        assert prune_unknown_fields(obj["kind"], "v1", obj, "Strict") == []
        assert obj == kept


@pytest.mark.asyncio
async def test_schemas_keep_what_the_emulator_and_its_kubelet_write() -> None:
    # Each stored object (defaulted, bound, with the kubelet's status; nodes, their leases,
    # namespaces, service accounts) pruned again, strictly, loses nothing: a client that
    # writes back what it read gets no warning.
    from bench.informers import realistic_pod
    from tests.sim.test_kubelet import Cluster, settle

    c = Cluster(nodes=1, pod_ready_delay=1.0)
    task = asyncio.create_task(c.kubelet.run(), name="test-kubelet")
    try:
        pod = realistic_pod(0)
        pod["metadata"].pop("managedFields")
        c.store.create(c.pods, pod, "default")
        for _ in range(3):
            await c.advance(1.0)
        await settle()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    objects = c.store.list(c.pods)[0]
    assert objects[0]["status"]["containerStatuses"], objects[0]["status"]
    for plural, group in _STORED:
        objects += c.store.list(c.store.resource(plural, group))[0]
    assert {"Pod", "Node", "Lease", "Namespace"} <= {o["kind"] for o in objects}
    for obj in objects:
        assert prune_unknown_fields(obj["kind"], "v1", obj, "Strict") == [], obj["kind"]


_STORED = [
    ("nodes", ""),
    ("leases", "coordination.k8s.io"),
    ("namespaces", ""),
    ("serviceaccounts", ""),
    ("configmaps", ""),
    ("events", ""),
]


def _declared_structs(obj: Any, struct: Struct, path: str) -> Iterator[tuple[str, Any]]:
    """(kube path prefix, the dict) for ``obj`` and every declared struct it holds."""
    yield path, obj
    for key, value in obj.items():
        sub = struct.get(key)
        if isinstance(sub, dict) and isinstance(value, dict):
            yield from _declared_structs(value, sub, f"{path}{key}.")
        elif isinstance(sub, ListOf) and isinstance(value, list):
            for i, item in enumerate(value):
                yield from _declared_structs(item, sub.item, f"{path}{key}[{i}].")


def test_prune_finds_an_unknown_field_in_every_struct_of_a_realistic_pod() -> None:
    # The fast check and the walk agree at every depth: one invented field in any declared
    # struct of a realistic pod (with a kubelet-like status) is found, by its path, alone.
    from bench.informers import realistic_pod

    pod = orjson.loads(orjson.dumps(realistic_pod(0)))  # no shared sub-dicts
    pod["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "podIPs": [{"ip": "10.0.0.1"}],
        "containerStatuses": [{"name": "app", "ready": True, "state": {"running": {}}}],
    }
    count = 0
    for i, (path, _) in enumerate(_declared_structs(pod, KINDS["Pod"], "")):
        body = orjson.loads(orjson.dumps(pod))
        dict(_declared_structs(body, KINDS["Pod"], ""))[path]["zzInvented"] = 1
        assert prune_unknown_fields("Pod", "v1", body, "Warn") == [f"{path}zzInvented"], i
        assert body == pod
        count += 1
    assert count > 40
