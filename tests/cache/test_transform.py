from __future__ import annotations

import copy
from typing import Any

import orjson

from pycm.cache.transform import SubtreeInterner, chain, drop_managed_fields, template_key
from tests.cache.helpers import pod


def _templated(i: int) -> dict[str, Any]:
    obj = pod(f"p{i}", str(i), labels={"app": "web"}, managed_fields=True)
    obj["spec"] = {
        "containers": [
            {
                "name": "app",
                "image": "registry/app:1.0",
                "env": [{"name": "A", "value": "1"}],
                "volumeMounts": [{"name": f"token-{i}", "mountPath": "/var/run"}],
            }
        ],
        "tolerations": [{"key": "k", "operator": "Exists"}],
    }
    return orjson.loads(orjson.dumps(obj))  # fresh, as decoded


def test_drop_managed_fields_removes_only_managed_fields() -> None:
    obj = pod("a", managed_fields=True)
    expected = copy.deepcopy(obj)
    del expected["metadata"]["managedFields"]
    assert drop_managed_fields(obj) == expected
    assert drop_managed_fields({"kind": "NoMeta"}) == {"kind": "NoMeta"}


def test_subtree_interner_identical_subtrees_shared_objects_unchanged() -> None:
    interner = SubtreeInterner()
    originals = [_templated(i) for i in range(3)]
    out = [interner(chain(drop_managed_fields)(copy.deepcopy(o))) for o in originals]
    for before, after in zip(originals, out, strict=True):
        del before["metadata"]["managedFields"]
        assert after == before
    a, b = out[0], out[1]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    assert a["spec"]["tolerations"] is b["spec"]["tolerations"]
    assert a["spec"]["containers"][0]["env"] is b["spec"]["containers"][0]["env"]
    # The containers differ (per-pod mount name): the lists are distinct, their parts shared.
    assert a["spec"]["containers"] is not b["spec"]["containers"]
    assert a["spec"]["containers"][0]["image"] is b["spec"]["containers"][0]["image"]
    assert interner.hits > 0


def test_subtree_interner_different_values_never_shared() -> None:
    interner = SubtreeInterner([("spec",)])
    one, two = interner({"spec": {"x": 1}}), interner({"spec": {"x": 2}})
    assert one["spec"] == {"x": 1} and two["spec"] == {"x": 2}
    assert interner.misses == 2


def test_subtree_interner_table_bounded_least_recent_dropped() -> None:
    interner = SubtreeInterner([("spec",)], max_entries=2)
    for i in range(5):
        interner({"spec": {"x": i}})
    assert len(interner) == 2
    kept = interner({"spec": {"x": 4}})  # the newest is still shared...
    again = interner({"spec": {"x": 4}})
    assert kept["spec"] is again["spec"]


def test_subtree_interner_same_template_shared_from_last_object_without_table() -> None:
    interner = SubtreeInterner()
    a = interner(drop_managed_fields(_templated(0)))
    table_after_first = len(interner)
    b = interner(drop_managed_fields(_templated(1)))
    assert b["spec"]["tolerations"] is a["spec"]["tolerations"]
    assert b["spec"]["containers"][0]["env"] is a["spec"]["containers"][0]["env"]
    # The second object's hits came from the first object itself, and its per-pod mount (which
    # differs from the first object's) was not hashed into the table either.
    assert len(interner) == table_after_first
    assert b["spec"]["containers"][0]["volumeMounts"][0]["name"] == "token-1"


def test_subtree_interner_other_template_shares_through_table() -> None:
    interner = SubtreeInterner()
    a = interner(drop_managed_fields(_templated(0)))
    other = _templated(1)
    other["metadata"]["labels"]["pod-template-hash"] = "other"
    b = interner(drop_managed_fields(other))
    assert template_key(a) != template_key(b)
    assert b["spec"]["tolerations"] is a["spec"]["tolerations"]


def test_subtree_interner_custom_resource_bool_and_int_never_confused() -> None:
    interner = SubtreeInterner([("spec",)])
    one = interner({"apiVersion": "example.com/v1", "metadata": {}, "spec": {"x": 1}})
    true = interner({"apiVersion": "example.com/v1", "metadata": {}, "spec": {"x": True}})
    assert one["spec"]["x"] is not True
    assert true["spec"]["x"] is True


def test_template_key_custom_resource_none_builtin_owner_and_hash() -> None:
    assert template_key({"apiVersion": "example.com/v1", "metadata": {}}) is None
    assert template_key({"apiVersion": "apps/v1", "metadata": {}}) == (None, None)
    rs_pod = {
        "apiVersion": "v1",
        "metadata": {
            "labels": {"pod-template-hash": "h1"},
            "ownerReferences": [{"uid": "u1"}],
        },
    }
    assert template_key(rs_pod) == ("u1", "h1")
    assert template_key({"apiVersion": "networking.k8s.io/v1", "metadata": {}}) == (None, None)
