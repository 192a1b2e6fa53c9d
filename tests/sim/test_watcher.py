"""A watcher without selectors sees exactly what one with an all-matching selector sees."""

from __future__ import annotations

import pytest

from pycm.sim.selectors import FieldSelector, LabelSelector, parse_label_selector
from pycm.sim.store import Store
from pycm.sim.watch import StoreEvent, Watcher
from pycm.util.clock import FakeClock
from tests.sim.conftest import pod


def _watcher(store: Store, namespace: str | None, labels: LabelSelector) -> Watcher:
    res = store.resource("configmaps")
    return Watcher(res.key, namespace, labels, FieldSelector(), 100, lambda _: None)


@pytest.mark.asyncio
@pytest.mark.parametrize("namespace", [None, "a", "b", "c"])
async def test_unselective_watcher_translates_like_an_all_matching_selector(
    namespace: str | None,
) -> None:
    store = Store(clock=FakeClock(), watch_window=100)
    cms, pods = store.resource("configmaps"), store.resource("pods")
    for ns in ("a", "b"):
        store.create(store.resource("namespaces"), {"metadata": {"name": ns}})
    since = store.resource_version
    merge = "application/merge-patch+json"
    for ns in ("a", "b"):
        store.create(cms, {"metadata": {"name": "x", "labels": {"on": "yes"}}}, ns)
        store.patch(cms, ns, "x", merge, {"metadata": {"labels": {"on": "no"}}})
        store.delete(cms, ns, "x")
    store.create(pods, pod("p"), "a")  # another resource: never seen
    history: list[StoreEvent] = list(store._history.since(since))
    plain = _watcher(store, namespace, LabelSelector())
    everything = _watcher(store, namespace, parse_label_selector("!absent"))
    seen = [plain.translate(e) for e in history]
    assert seen == [everything.translate(e) for e in history]
    kept = [(t, o["metadata"]["namespace"]) for t, o in (s for s in seen if s is not None)]
    expected = [(t, ns) for ns in ("a", "b") for t in ("ADDED", "MODIFIED", "DELETED")]
    assert kept == [e for e in expected if namespace is None or e[1] == namespace]
