"""A body whose JSON types the kind's Go types cannot hold is a 400 worded as kube's decoder
(encoding/json) words it: the JSON type sent, the Go struct holding the field, the field's path
from the object's root without indices or map keys, and its Go type."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.sim import shape
from pycm.sim.errors import APIError

CASES = [
    pytest.param(
        "Deployment",
        {"spec": {"replicas": "3"}},
        "string into Go struct field DeploymentSpec.spec.replicas of type int32",
        id="replicas-string",
    ),
    pytest.param(
        "Deployment",
        {"spec": True},
        "bool into Go struct field Deployment.spec of type v1.DeploymentSpec",
        id="spec-bool",
    ),
    pytest.param(
        "StatefulSet",
        {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": 1}]}}}},
        "number into Go struct field Container.spec.template.spec.containers.image of type string",
        id="container-image",
    ),
    pytest.param(
        "Deployment",
        {"spec": {"template": {"spec": {"containers": "x"}}}},
        "string into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container",
        id="containers-not-a-list",
    ),
    pytest.param(
        "Pod",
        {"metadata": {"labels": {"a": 1}}},
        "number into Go struct field ObjectMeta.metadata.labels of type string",
        id="label-value",
    ),
    pytest.param(
        "Pod",
        {"spec": {"terminationGracePeriodSeconds": "30"}},
        "string into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64",
        id="int64",
    ),
    pytest.param(
        "Service",
        {"spec": {"ports": [{"port": "80"}]}},
        "string into Go struct field ServicePort.spec.ports.port of type int32",
        id="service-port",
    ),
    pytest.param(
        "ReplicaSet",
        {"spec": {"selector": {"matchExpressions": [{"key": 1}]}}},
        "number into Go struct field LabelSelectorRequirement.spec.selector.matchExpressions.key "
        "of type string",
        id="selector-requirement",
    ),
    pytest.param(
        "RoleBinding",
        {"subjects": [{"kind": "User", "name": ["u"]}]},
        "array into Go struct field Subject.subjects.name of type string",
        id="subject-name",
    ),
]


@pytest.mark.parametrize(("kind", "body", "tail"), CASES)
def test_shape_wrong_json_type_is_400_in_kubes_words(
    kind: str, body: dict[str, Any], tail: str
) -> None:
    with pytest.raises(APIError) as caught:
        shape.check_shape(kind, body)
    assert caught.value.code == 400
    assert caught.value.message == (
        f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal {tail}'
    )


def test_shape_names_the_version_a_kind_is_served_at() -> None:
    with pytest.raises(APIError) as caught:
        shape.check_shape("LeaseCandidate", {"spec": {"leaseName": 1}})
    assert caught.value.message.startswith(
        'LeaseCandidate in version "v1beta1" cannot be handled as a LeaseCandidate: '
    )
