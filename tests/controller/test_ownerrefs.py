"""set_controller_reference / set_owner_reference: controller-runtime's rules, as a table."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.controller import AlreadyOwnedError, set_controller_reference, set_owner_reference
from pycm.kube.resources import NAMESPACES, Resource
from pycm.trace.bus import Bus
from pycm.trace.kinds import OwnerReferenceSet

WEBSITES = Resource("example.com", "v1", "websites", "Website", True)


def _obj(name: str, namespace: str = "shop", uid: str = "", refs: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}"}
    if namespace:
        meta["namespace"] = namespace
    if refs is not None:
        meta["ownerReferences"] = refs
    return {"kind": "Deployment", "metadata": meta}


def _ref(name: str, *, controller: bool = True, kind: str = "Website") -> dict[str, Any]:
    ref: dict[str, Any] = {
        "apiVersion": "example.com/v1",
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
    }
    if controller:
        ref |= {"controller": True, "blockOwnerDeletion": True}
    return ref


def test_set_controller_reference_adds_a_controller_ref_without_mutating() -> None:
    bus = Bus()
    owner, obj = _obj("site"), _obj("site-web")
    out = set_controller_reference(owner, obj, WEBSITES, bus=bus)
    assert out["metadata"]["ownerReferences"] == [_ref("site")]
    assert "ownerReferences" not in obj["metadata"]
    (event,) = [e for e in bus.recent() if isinstance(e, OwnerReferenceSet)]
    assert (event.owner_kind, event.owner_name, event.name, event.controller) == (
        "Website",
        "site",
        "site-web",
        True,
    )


def test_set_controller_reference_again_replaces_not_duplicates() -> None:
    owner = _obj("site")
    other = _ref("x", kind="Other", controller=False)
    obj = _obj("site-web", refs=[_ref("site", controller=False), other])
    out = set_controller_reference(owner, obj, WEBSITES, bus=Bus())
    assert out["metadata"]["ownerReferences"] == [_ref("site"), other]


@pytest.mark.parametrize(
    ("owner", "obj", "error", "message"),
    [
        pytest.param(
            _obj("site"),
            _obj("web", refs=[_ref("other")]),
            AlreadyOwnedError,
            "Object shop/web is already owned by another Website controller other",
            id="another-controller",
        ),
        pytest.param(
            _obj("site"),
            _obj("web", namespace="elsewhere"),
            ValueError,
            "cross-namespace owner references are disallowed, owner's namespace shop, "
            "obj's namespace elsewhere",
            id="cross-namespace",
        ),
        pytest.param(
            _obj("site"),
            _obj("node-thing", namespace=""),
            ValueError,
            "cluster-scoped resource must not have a namespace-scoped owner, "
            "owner's namespace shop",
            id="namespaced-owner-of-cluster-scoped",
        ),
        pytest.param(
            _obj("site", uid="-"),
            _obj("web"),
            None,
            "",
            id="ok",
        ),
    ],
)
def test_set_controller_reference_rules(
    owner: dict[str, Any], obj: dict[str, Any], error: type[Exception] | None, message: str
) -> None:
    if error is None:
        set_controller_reference(owner, obj, WEBSITES, bus=Bus())
        return
    with pytest.raises(error) as info:
        set_controller_reference(owner, obj, WEBSITES, bus=Bus())
    assert str(info.value) == message


def test_cluster_scoped_owner_may_own_a_namespaced_object() -> None:
    namespace = {"kind": "Namespace", "metadata": {"name": "shop", "uid": "uid-ns"}}
    out = set_owner_reference(namespace, _obj("web"), NAMESPACES, bus=Bus())
    assert out["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Namespace", "name": "shop", "uid": "uid-ns"}
    ]


def test_owner_without_uid_is_refused() -> None:
    owner = {"metadata": {"name": "site", "namespace": "shop"}}
    with pytest.raises(ValueError, match=r"needs metadata\.name and metadata\.uid"):
        set_controller_reference(owner, _obj("web"), WEBSITES, bus=Bus())


def test_set_owner_reference_over_a_controller_reference_replaces_it_whole() -> None:
    """The same owner's reference is replaced, not merged: setting a plain owner reference
    where a controller reference to the same owner was leaves no controller flag behind (it
    kept ``controller: true`` and ``blockOwnerDeletion`` from the old one)."""
    obj = _obj("site-web", refs=[{**_ref("site"), "uid": "uid-old"}])
    out = set_owner_reference(_obj("site"), obj, WEBSITES, bus=Bus())
    assert out["metadata"]["ownerReferences"] == [_ref("site", controller=False)]
