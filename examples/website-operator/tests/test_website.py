"""The Website operator against an emulated cluster, with pycm.testing's fixtures: it
reconciles a Website into a Deployment and a Service it owns, reports Ready through the status
subresource, fails on a Website without an image (a Warning event) and recovers once it is
fixed, and runs its finalizer when the Website is deleted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pycm_website.controller import FINALIZER, descriptor

from pycm.testing import Cluster, ManagerHandle, wait_for

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
WEBSITE = "example.com/v1"


def _condition(obj: Any, type_: str) -> Any:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition["type"] == type_:
            return condition
    return {}


def _ready(obj: Any) -> bool:
    return bool(_condition(obj, "Ready").get("status") == "True")


def _events(cluster: Cluster, namespace: str) -> list[tuple[str, str, str]]:
    events = cluster.resource("v1", "Event").get(namespace=namespace).to_dict()["items"]
    return [(e["type"], e["reason"], e["message"]) for e in events]


@pytest.fixture
def operator(pycm_cluster: Cluster, pycm_manager: Callable[..., ManagerHandle]) -> ManagerHandle:
    """The CRD installed, then a manager running the operator and the built-in controllers
    that turn its Deployment into pods."""
    pycm_cluster.apply(DEPLOY / "crd.yaml")
    return pycm_manager(["website", "deployment", "replicaset"], descriptors=[descriptor])


def test_website_becomes_an_owned_deployment_and_service_and_ready(
    pycm_cluster: Cluster, pycm_namespace: str, operator: ManagerHandle
) -> None:
    pycm_cluster.apply(DEPLOY / "website.yaml", namespace=pycm_namespace)
    site = pycm_cluster.wait_for_object(WEBSITE, "Website", "shop", pycm_namespace, _ready, 30)
    assert FINALIZER in site["metadata"]["finalizers"]
    ready = _condition(site, "Ready")
    assert (ready["reason"], ready["message"]) == ("Available", "2 of 2 replicas available")
    assert ready["observedGeneration"] == site["metadata"]["generation"]
    deployment = pycm_cluster.get("apps/v1", "Deployment", "shop", pycm_namespace)
    service = pycm_cluster.get("v1", "Service", "shop", pycm_namespace)
    for child in (deployment, service):
        (ref,) = child["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
            "Website",
            "shop",
            site["metadata"]["uid"],
            True,
        )
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert service["spec"]["ports"][0]["port"] == 80


def test_website_without_image_fails_with_a_warning_then_recovers(
    pycm_cluster: Cluster, pycm_namespace: str, operator: ManagerHandle
) -> None:
    broken = (DEPLOY / "website.yaml").read_text().replace("image: nginx:1.25", 'image: ""')
    pycm_cluster.apply(broken, namespace=pycm_namespace)

    def no_image(obj: Any) -> bool:
        return bool(_condition(obj, "Ready").get("reason") == "NoImage")

    pycm_cluster.wait_for_object(WEBSITE, "Website", "shop", pycm_namespace, no_image)
    warning = ("Warning", "ReconcileFailed", "spec.image is empty: set it to the image to serve")
    pycm_cluster.wait_for_object(
        "v1",
        "Namespace",
        pycm_namespace,
        predicate=lambda _: warning in _events(pycm_cluster, pycm_namespace),
    )
    assert pycm_cluster.get("apps/v1", "Deployment", "shop", pycm_namespace) is None
    pycm_cluster.apply(DEPLOY / "website.yaml", namespace=pycm_namespace)  # fixed
    pycm_cluster.wait_for_object(WEBSITE, "Website", "shop", pycm_namespace, _ready, 30)


def test_deleting_a_website_runs_its_finalizer_and_its_children_go(
    pycm_cluster: Cluster, pycm_namespace: str, operator: ManagerHandle
) -> None:
    pycm_cluster.apply(DEPLOY / "website.yaml", namespace=pycm_namespace)
    pycm_cluster.wait_for_object(WEBSITE, "Website", "shop", pycm_namespace, _ready, 30)
    pycm_cluster.delete(WEBSITE, "Website", "shop", pycm_namespace)

    def gone() -> bool:
        return all(
            pycm_cluster.get(api_version, kind, "shop", pycm_namespace) is None
            for api_version, kind in ((WEBSITE, "Website"), ("apps/v1", "Deployment"))
        )

    wait_for(gone, 30, what="the Website and its Deployment to be gone")
    cleaned = ("Normal", "CleanedUp", "the Deployment and Service go with it")
    # (Events are written by the recorder's own task: shortly after the reconcile.)
    wait_for(lambda: cleaned in _events(pycm_cluster, pycm_namespace), what=str(cleaned))
