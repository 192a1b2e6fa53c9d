"""Discovery of custom resources' groups: versions in kube's priority order."""

from __future__ import annotations

from pycm.sim.discovery import version_priority


def test_version_priority_is_kubes_order() -> None:
    # The example of apimachinery's CompareKubeAwareVersionStrings documentation.
    given = [
        "foo10",
        "v1",
        "v12alpha1",
        "v3beta1",
        "v10beta3",
        "v11beta2",
        "v2",
        "foo1",
        "v11alpha2",
        "v10",
    ]
    want = [
        "v10",
        "v2",
        "v1",
        "v11beta2",
        "v10beta3",
        "v3beta1",
        "v12alpha1",
        "v11alpha2",
        "foo1",
        "foo10",
    ]
    assert sorted(given, key=version_priority) == want
