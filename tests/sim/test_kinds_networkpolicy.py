"""networking.k8s.io/v1 NetworkPolicy, case by case as kube's ``validation_test.go``: valid
policies are created and defaulted, invalid ones refused with exactly kube's causes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pycm.sim.errors import APIError
from pycm.sim.store import Store

GROUP = "networking.k8s.io"


def policy(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"podSelector": {}, **spec}}


def create(store: Store, body: dict[str, Any]) -> dict[str, Any]:
    res = store.resource("networkpolicies", GROUP)
    return store.create(res, copy.deepcopy(body), "default")


def causes(store: Store, body: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(APIError) as err:
        create(store, body)
    assert err.value.code == 422, err.value.status()
    return [(c["field"], c["message"]) for c in err.value.status()["details"]["causes"]]


def test_networkpolicy_defaults_policy_types_and_protocols(store: Store) -> None:
    ingress_only = create(store, policy(ingress=[{"ports": [{"port": 80}]}]))
    assert ingress_only["spec"]["policyTypes"] == ["Ingress"]
    assert ingress_only["spec"]["ingress"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    assert ingress_only["metadata"]["generation"] == 1
    both = policy(egress=[{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}])
    both["metadata"]["name"] = "q"
    assert create(store, both)["spec"]["policyTypes"] == ["Ingress", "Egress"]


VALID = [
    pytest.param(policy(), id="deny-all-ingress"),
    pytest.param(
        policy(
            ingress=[
                {
                    "from": [
                        {"podSelector": {"matchLabels": {"app": "web"}}},
                        {
                            "namespaceSelector": {
                                "matchExpressions": [{"key": "team", "operator": "Exists"}]
                            },
                            "podSelector": {"matchLabels": {"role": "db"}},
                        },
                        {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.1.0/24"]}},
                    ],
                    "ports": [
                        {"port": 5432, "endPort": 5440, "protocol": "TCP"},
                        {"port": "metrics", "protocol": "SCTP"},
                    ],
                }
            ],
            policyTypes=["Ingress", "Egress"],
        ),
        id="peers-and-ports",
    ),
]


@pytest.mark.parametrize("body", VALID)
def test_networkpolicy_valid_is_created(store: Store, body: dict[str, Any]) -> None:
    assert create(store, body)["kind"] == "NetworkPolicy"


INVALID = [
    pytest.param(
        policy(podSelector={"matchExpressions": [{"key": "a", "operator": "Near"}]}),
        [
            (
                "spec.podSelector.matchExpressions[0].operator",
                'Invalid value: "Near": not a valid selector operator',
            )
        ],
        id="selector-operator",
    ),
    pytest.param(
        policy(
            podSelector={
                "matchLabels": {"a": "b c"},
                "matchExpressions": [
                    {"key": "a", "operator": "In"},
                    {"key": "b", "operator": "Exists", "values": ["x"]},
                ],
            }
        ),
        [
            (
                "spec.podSelector.matchLabels",
                'Invalid value: "b c": a valid label must be an empty string or consist of '
                "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
                "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
            (
                "spec.podSelector.matchExpressions[0].values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ),
            (
                "spec.podSelector.matchExpressions[1].values",
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
        ],
        id="selector-values",
    ),
    pytest.param(
        policy(
            ingress=[
                {
                    "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}],
                    "ports": [
                        {"protocol": "ICMP", "port": 0},
                        {"port": 80, "endPort": 70},
                        {"port": "http", "endPort": 90},
                        {"endPort": 90},
                    ],
                }
            ]
        ),
        [
            (
                "spec.ingress[0].ports[0].protocol",
                'Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"',
            ),
            (
                "spec.ingress[0].ports[0].port",
                "Invalid value: 0: must be between 1 and 65535, inclusive",
            ),
            (
                "spec.ingress[0].ports[1].endPort",
                "Invalid value: 70: must be greater than or equal to `port`",
            ),
            (
                "spec.ingress[0].ports[2].endPort",
                "Invalid value: 90: may not be specified when `port` is non-numeric",
            ),
            (
                "spec.ingress[0].ports[3].endPort",
                "Invalid value: 90: may not be specified when `port` is not specified",
            ),
            ("spec.ingress[0].from[0]", "Required value: must specify a peer"),
            ("spec.ingress[0].from[1]", "Forbidden: may not specify both ipBlock and another peer"),
        ],
        id="ports-and-peers",
    ),
    pytest.param(
        policy(
            egress=[
                {
                    "to": [
                        {"ipBlock": {"cidr": "10.0.0.0"}},
                        {
                            "ipBlock": {
                                "cidr": "10.0.0.0/16",
                                "except": ["10.1.0.0/24", "10.0.0.0/16"],
                            }
                        },
                    ]
                }
            ],
            policyTypes=["Egress", "Sideways"],
        ),
        [
            (
                "spec.egress[0].to[0].ipBlock.cidr",
                'Invalid value: "10.0.0.0": must be a valid CIDR value, (e.g. 10.9.8.0/24 or '
                "2001:db8::/64)",
            ),
            (
                "spec.egress[0].to[1].ipBlock.except[0]",
                'Invalid value: "10.1.0.0/24": must be a strict subset of `cidr`',
            ),
            (
                "spec.egress[0].to[1].ipBlock.except[1]",
                'Invalid value: "10.0.0.0/16": must be a strict subset of `cidr`',
            ),
            (
                "spec.policyTypes[1]",
                'Unsupported value: "Sideways": supported values: "Ingress", "Egress"',
            ),
        ],
        id="ip-blocks-and-types",
    ),
    pytest.param(
        policy(policyTypes=["Ingress", "Egress", "Ingress"]),
        [
            (
                "spec.policyTypes",
                'Invalid value: &[]networking.PolicyType{"Ingress", "Egress", "Ingress"}: may not '
                "specify more than two policyTypes",
            )
        ],
        id="too-many-types",
    ),
]


@pytest.mark.parametrize(("body", "expected"), INVALID)
def test_networkpolicy_invalid_is_refused_with_kubes_causes(
    store: Store, body: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert causes(store, body) == expected


def test_networkpolicy_spec_change_bumps_generation_and_table_shows_the_selector(
    store: Store,
) -> None:
    created = create(store, policy(podSelector={"matchLabels": {"app": "web"}}))
    created["spec"]["policyTypes"] = ["Ingress", "Egress"]
    res = store.resource("networkpolicies", GROUP)
    updated = store.update(res, copy.deepcopy(created))
    assert updated["metadata"]["generation"] == 2
    printer = res.strategy.printer
    assert [c["name"] for c in printer.columns] == ["Name", "Pod-Selector", "Age"]
    assert printer.cells(updated, 0.0)[:2] == ["p", "app=web"]
