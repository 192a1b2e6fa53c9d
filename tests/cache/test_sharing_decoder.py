"""SharingDecoder: the same objects as orjson minus managedFields, identical sub-trees shared,
bad numbers refused clearly (and an informer fed them keeps running)."""

from __future__ import annotations

import asyncio
import copy
import sys
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.informers import realistic_pod
from pycm.cache.listwatch import ClientListWatch
from pycm.cache.sharing_decoder import SharingDecoder, list_head
from pycm.kube import KubeError
from pycm.kube import resources as kube_resources
from tests.cache.decoded import reduce_managed_fields


def _served(i: int, rv: int = 1) -> dict[str, Any]:
    """Pod ``i`` as a server would send it: realistic, with name-derived metadata."""
    obj = realistic_pod(i)
    obj["metadata"] |= {"namespace": "default", "uid": f"uid-{i}", "resourceVersion": str(rv)}
    obj["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    return obj


def _without_managed_fields(obj: dict[str, Any], *, watched: bool = False) -> dict[str, Any]:
    """What the decoder makes of ``obj``: a listed object's managedFields left out, a watched
    (or generically walked) one's as their JSON bytes."""
    out = copy.deepcopy(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        reduce_managed_fields(meta, watched=watched)
    return out


def _list_body(items: list[dict[str, Any]], **meta: Any) -> bytes:
    return orjson.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items})


def test_sharing_decoder_list_equals_orjson_without_managed_fields() -> None:
    pods = [_served(i) for i in range(25)]
    items, meta = SharingDecoder().decode_list(
        _list_body(pods, resourceVersion="7", **{"continue": "tok"})
    )
    assert meta == {"resourceVersion": "7", "continue": "tok"}
    assert items == [_without_managed_fields(p) for p in pods]
    assert all("managedFields" not in o["metadata"] for o in items)


def test_sharing_decoder_same_template_subtrees_are_one_object_per_pod_parts_are_not() -> None:
    a, b = SharingDecoder().decode_list(_list_body([_served(0), _served(10)]))[0]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    assert a["spec"]["tolerations"] is b["spec"]["tolerations"]
    assert a["spec"]["affinity"] is b["spec"]["affinity"]
    assert a["spec"]["containers"][0]["env"] is b["spec"]["containers"][0]["env"]
    assert a["spec"]["volumes"][1]["projected"] is b["spec"]["volumes"][1]["projected"]
    # The per-pod token volume's name and its mounts differ: never shared.
    assert a["spec"]["volumes"][1]["name"] != b["spec"]["volumes"][1]["name"]
    mount_a = a["spec"]["containers"][0]["volumeMounts"][1]
    assert mount_a != b["spec"]["containers"][0]["volumeMounts"][1]
    assert a["metadata"]["name"] != b["metadata"]["name"]


def test_sharing_decoder_other_shapes_take_the_generic_walk() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    odd_pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": [1, 2], "extra": None}
    decoder = SharingDecoder()
    assert decoder.decode_object(orjson.dumps(config_map)) == config_map
    assert decoder.decode_object(orjson.dumps(odd_pod)) == odd_pod
    items, _ = decoder.decode_list(_list_body([config_map, _served(1)]))
    assert items == [config_map, _without_managed_fields(_served(1))]


_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5)
_values = st.recursive(
    _scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)
_keys = st.sampled_from(
    ["metadata", "spec", "status", "kind", "containers", "volumes", "name", "labels", "x"]
)
_objects = st.recursive(
    _values,
    lambda inner: st.dictionaries(_keys, inner, max_size=5) | st.lists(inner, max_size=3),
    max_leaves=20,
)


# 120 examples: each is up to four nested objects of ~100 leaves, so generating them is most of
# the test's time (300 took 14 s of CI's 6 minutes); the fixed cases above cover the pod shapes.
@settings(max_examples=120, deadline=None)
@given(st.lists(st.dictionaries(_keys, _objects, max_size=5), min_size=1, max_size=4))
def test_sharing_decoder_any_objects_decode_as_orjson_minus_managed_fields(
    objs: list[dict[str, Any]],
) -> None:
    decoder = SharingDecoder(max_entries=4)
    for obj in objs * 2:  # twice: the second time through the table
        data = orjson.dumps(obj)
        assert decoder.decode_object(data) == _without_managed_fields(orjson.loads(data))


def test_sharing_decoder_table_bounded_by_two_generations() -> None:
    decoder = SharingDecoder(max_entries=8)
    for i in range(200):
        decoder.decode_object(orjson.dumps({"kind": "X", "status": {"n": i}}))
    assert len(decoder) <= 16
    assert decoder.misses == 200


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"items":[{"kind":"Pod","status":{"x":1e400}}]}', id="out-of-range"),
        pytest.param(b'{"items":[{"kind":"Pod","spec":{"a":-1e999}}]}', id="negative"),
        pytest.param(b'{"items":[{"kind":"Pod"', id="truncated"),
    ],
)
def test_sharing_decoder_undecodable_list_raises_kube_error(body: bytes) -> None:
    with pytest.raises(KubeError, match="undecodable"):
        SharingDecoder().decode_list(body)


def test_sharing_decoder_events_error_status_plain_and_bad_lines_refused() -> None:
    decoder = SharingDecoder()
    ok = orjson.dumps({"type": "MODIFIED", "object": _served(3, rv=9)})
    err = orjson.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410}})
    assert decoder.decode_events([ok, err]) == [
        ("MODIFIED", _without_managed_fields(_served(3, rv=9), watched=True)),
        ("ERROR", {"kind": "Status", "code": 410}),
    ]
    # A Status of the usual object shape is still an ERROR's plain Status; other shapes decode.
    shaped = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    config_map = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    lines = [
        orjson.dumps({"type": "ERROR", "object": shaped}),
        orjson.dumps({"type": "ADDED", "object": config_map}),
    ]
    assert decoder.decode_events(lines) == [("ERROR", shaped), ("ADDED", config_map)]
    for bad in (
        b'{"type":"ADDED"}',
        b"not json",
        b'{"type":"ADDED","object":{"x":1e400}}',
        b'{"type":"ADDED","object":{"kind":"Pod","status":{"x":1e400}}}',
    ):
        with pytest.raises(KubeError):
            decoder.decode_events([bad])


class _RawClient:
    """A client that hands out raw list pages (as pycm.kube.Client.list_raw)."""

    def __init__(self, *bodies: bytes) -> None:
        self.bodies = list(bodies)

    async def list(self, resource: Any, **kwargs: Any) -> Any:
        raise AssertionError("the raw path must be used")

    async def list_raw(self, resource: Any, **kwargs: Any) -> bytes:
        return self.bodies.pop(0)

    def watch(self, resource: Any, **kwargs: Any) -> Any:
        raise AssertionError("not watched here")


@pytest.mark.asyncio
async def test_client_list_watch_with_decoder_pages_from_raw_bodies() -> None:
    body = _list_body([_served(1)], resourceVersion="5", **{"continue": "next"})
    lw = ClientListWatch(_RawClient(body), kube_resources.PODS, decoder=SharingDecoder())
    page = await lw.list(resource_version="0", limit=500, continue_=None)
    assert page.items == [_without_managed_fields(_served(1))]
    assert (page.resource_version, page.continue_, page.size_bytes) == ("5", "next", len(body))


def test_client_list_watch_decoder_ignored_without_raw_client() -> None:
    class Plain:
        async def list(self, resource: Any, **kwargs: Any) -> Any: ...

        def watch(self, resource: Any, **kwargs: Any) -> Any: ...

    assert ClientListWatch(Plain(), kube_resources.PODS, decoder=SharingDecoder()).decoder is None


class _PagedClient(_RawClient):
    """Raw pages by continue token; records when each page is asked for and decoded."""

    def __init__(self, log: list[str], pages: dict[str | None, bytes]) -> None:
        super().__init__()
        self.log = log
        self.pages = pages

    async def list_raw(self, resource: Any, **kwargs: Any) -> bytes:
        token = kwargs.get("continue_")
        self.log.append(f"fetch {token}")
        await asyncio.sleep(0)
        return self.pages[token]


class _LoggingDecoder(SharingDecoder):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def decode_list(self, body: bytes) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        items, meta = super().decode_list(body)
        self.log.append(f"decode {items[0]['metadata']['name']}")
        return items, meta


@pytest.mark.asyncio
async def test_client_list_watch_next_page_requested_before_this_one_is_decoded() -> None:
    log: list[str] = []
    pods = [_served(i) for i in range(3)]
    pages = {
        None: _list_body([pods[0]], resourceVersion="5", **{"continue": "t1"}),
        "t1": _list_body([pods[1]], resourceVersion="5", **{"continue": "t2"}),
        "t2": _list_body([pods[2]], resourceVersion="5"),
    }
    lw = ClientListWatch(
        _PagedClient(log, pages), kube_resources.PODS, decoder=_LoggingDecoder(log)
    )
    got = []
    token = None
    while True:
        page = await lw.list(
            resource_version="0" if token is None else "", limit=1, continue_=token
        )
        got.extend(page.items)
        token = page.continue_
        if token is None:
            break
    assert got == [_without_managed_fields(p) for p in pods]
    n0, n1, n2 = (p["metadata"]["name"] for p in pods)
    assert log == [
        "fetch None",
        "fetch t1",
        f"decode {n0}",
        "fetch t2",
        f"decode {n1}",
        f"decode {n2}",
    ]


@pytest.mark.asyncio
async def test_client_list_watch_prefetch_cancelled_when_decoding_fails() -> None:
    log: list[str] = []
    bad_first = b'{"metadata":{"continue":"t1"},"items":[{"kind":"Pod","x":1e400}]}'
    lw = ClientListWatch(
        _PagedClient(log, {None: bad_first, "t1": _list_body([])}),
        kube_resources.PODS,
        decoder=SharingDecoder(),
    )
    with pytest.raises(KubeError, match="undecodable"):
        await lw.list(resource_version="0", limit=1, continue_=None)
    assert lw._prefetch is None
    assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


def test_list_head_reads_metadata_before_items_else_none() -> None:
    body = _list_body([_served(0)], resourceVersion="3", **{"continue": "tok"})
    assert list_head(body) == {"resourceVersion": "3", "continue": "tok"}
    # Metadata after the items: not read from the head (the page is decoded first instead).
    assert list_head(b'{"items":[],"metadata":{"continue":"x"}}') is None
    # An escaped "items" inside a metadata string does not cut the head short.
    assert list_head(b'{"metadata":{"a":"\\"items\\":"},"items":[]}') == {"a": '"items":'}
    assert list_head(b'{"metadata":{}}') is None


@pytest.mark.asyncio
async def test_informer_fed_an_undecodable_number_backs_off_and_keeps_running() -> None:
    from pycm.cache.shared_informer import SharedIndexInformer
    from pycm.trace.bus import Bus
    from pycm.trace.kinds import InformerBackedOff
    from pycm.util.clock import FakeClock

    bad = b'{"metadata":{"resourceVersion":"2"},"items":[{"kind":"Pod","status":{"x":1e400}}]}'
    bus = Bus()
    clock = FakeClock()
    lw = ClientListWatch(_RawClient(bad, bad, bad), kube_resources.PODS, decoder=SharingDecoder())
    informer = SharedIndexInformer(lw, "pods", bus=bus, clock=clock)
    task = asyncio.create_task(informer.run())
    backoffs: list[InformerBackedOff] = []
    for _ in range(200):
        await asyncio.sleep(0)
        backoffs = [e for e in bus.recent() if isinstance(e, InformerBackedOff)]
        if backoffs:
            break
    assert backoffs and "undecodable" in backoffs[0].reason
    assert not task.done() and not informer.has_synced()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def test_factory_shares_by_decoder_with_raw_client_by_interner_otherwise() -> None:
    from pycm.cache.factory import SharedInformerFactory
    from pycm.cache.transform import drop_managed_fields
    from pycm.trace.bus import Bus

    class Plain:
        async def list(self, resource: Any, **kwargs: Any) -> Any: ...

        def watch(self, resource: Any, **kwargs: Any) -> Any: ...

    raw = SharedInformerFactory(_RawClient(), bus=Bus()).informer_for(kube_resources.PODS)
    lw = raw.reflector.list_watch
    assert isinstance(lw, ClientListWatch) and isinstance(lw.decoder, SharingDecoder)
    # The writer noted (pycm.trace.causes), then no interner after the decoder.
    assert raw.fifo._transform.transform is drop_managed_fields  # type: ignore[attr-defined]
    plain = SharedInformerFactory(Plain(), bus=Bus()).informer_for(kube_resources.PODS)
    lw = plain.reflector.list_watch
    assert isinstance(lw, ClientListWatch) and lw.decoder is None
    # Drop, then the interner.
    assert plain.fifo._transform.transform is not drop_managed_fields  # type: ignore[attr-defined]
    off = SharedInformerFactory(_RawClient(), bus=Bus(), intern=False)
    lw = off.informer_for(kube_resources.PODS).reflector.list_watch
    assert isinstance(lw, ClientListWatch) and lw.decoder is None


def test_sharing_decoder_watched_update_reuses_the_previous_spec_whole_unless_changed() -> None:
    decoder = SharingDecoder()
    first, second = _served(4, rv=1), _served(4, rv=2)
    second["metadata"]["annotations"] = {"bench/generation": "1"}
    changed = copy.deepcopy(second)
    changed["spec"]["containers"][0]["image"] = "registry.example.com/team/svc-4:2.0"
    events = decoder.decode_events(
        [orjson.dumps({"type": "MODIFIED", "object": o}) for o in (first, second, changed)]
    )
    (_, a), (_, b), (_, c) = events
    assert [a, b, c] == [_without_managed_fields(o, watched=True) for o in (first, second, changed)]
    assert b["spec"] is a["spec"]
    assert c["spec"] is not a["spec"]
    assert c["spec"]["containers"][0]["env"] is a["spec"]["containers"][0]["env"]


def test_client_list_watch_capability_asked_of_the_class_not_a_strict_double() -> None:
    class Strict:
        async def list(self, resource: Any, **kwargs: Any) -> Any: ...

        def watch(self, resource: Any, **kwargs: Any) -> Any: ...

        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"unexpected API call: {name}")

    lw = ClientListWatch(Strict(), kube_resources.PODS, decoder=SharingDecoder())
    assert lw.decoder is None


def test_sharing_decoder_fast_path_and_generic_walk_follow_one_plan() -> None:
    """What is shared is stated once, in the plan: a plan that shares nothing in metadata is
    followed by the usual shape's single scan (lists, watch events) and by the generic walk."""
    from pycm.cache.sharing_decoder import _SHARED, _WRITER, _Plan, default_plan

    default = default_plan()
    assert default.keys is not None
    plan = _Plan(
        keys=default.keys | {"metadata": _Plan(keys={"managedFields": _WRITER}, other=None)},
        other=_SHARED,
    )
    pods = [_served(0), _served(10)]
    odd = [p | {"extra": {"x": 1}} for p in pods]  # an unusual shape: the generic walk
    listed, _ = SharingDecoder(plan=plan).decode_list(_list_body(pods))
    watched = [
        o
        for _, o in SharingDecoder(plan=plan).decode_events(
            [orjson.dumps({"type": "ADDED", "object": p}) for p in pods]
        )
    ]
    walker = SharingDecoder(plan=plan)
    walked = [walker.decode_object(orjson.dumps(p)) for p in odd]
    for a, b in (listed, watched, walked):
        assert a["metadata"]["labels"] == b["metadata"]["labels"]
        assert a["metadata"]["labels"] is not b["metadata"]["labels"]
        assert a["spec"]["tolerations"] is b["spec"]["tolerations"]
    assert listed == [_without_managed_fields(p) for p in pods]
    assert watched == [_without_managed_fields(p, watched=True) for p in pods]
    assert walked == [_without_managed_fields(p, watched=True) for p in odd]
    # The default plan shares labels on every path.
    a, b = SharingDecoder().decode_list(_list_body(pods))[0]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]


def test_sharing_decoder_forgets_a_deleted_objects_tail_on_either_path() -> None:
    # Under churn (pods made and deleted) the deleted objects' remembered tails were most of
    # the table until their generation was dropped: a DELETED event removes its own at once.
    decoder = SharingDecoder()
    pods = [_served(i, rv=1) for i in range(3)]
    lines = [orjson.dumps({"type": "ADDED", "object": p}) for p in pods]
    decoder.decode_events(lines)
    # pod 0's delete repeats its last tail (the head path), pod 1's changes its status (the
    # usual path); pod 2 stays.
    gone = copy.deepcopy(pods[1])
    gone["status"] = {"phase": "Succeeded"}
    deleted = decoder.decode_events(
        [orjson.dumps({"type": "DELETED", "object": o}) for o in (pods[0], gone)]
    )
    assert [obj["metadata"]["name"] for _, obj in deleted] == [
        pods[0]["metadata"]["name"],
        pods[1]["metadata"]["name"],
    ]
    assert deleted[1][1] == _without_managed_fields(gone, watched=True)
    hints = {b'"name":"' + p["metadata"]["name"].encode() for p in pods}
    remembered = hints & (set(decoder._new) | set(decoder._old))
    assert remembered == {b'"name":"' + pods[2]["metadata"]["name"].encode()}


def test_sharing_decoder_watched_status_changes_are_decoded_not_remembered() -> None:
    # A changed status is, as a rule, its object's alone: remembering each one grew the table
    # (and the manager) without end under churn. A status already in the table is still shared.
    decoder = SharingDecoder()
    pod = _served(7, rv=1)
    decoder.decode_events([orjson.dumps({"type": "ADDED", "object": pod})])
    held = len(decoder)
    updates = []
    for i in range(200):
        changed = copy.deepcopy(pod)
        changed["metadata"]["resourceVersion"] = str(i + 2)
        changed["status"] = {"phase": "Running", "podIP": f"10.0.{i // 250}.{i % 250}"}
        updates.append(changed)
    events = decoder.decode_events(
        [orjson.dumps({"type": "MODIFIED", "object": o}) for o in updates]
    )
    assert [obj for _, obj in events] == [_without_managed_fields(o, watched=True) for o in updates]
    assert len(decoder) <= held + 1, "only the pod's own remembered tail may change"


def _held(*tables: dict[bytes, Any]) -> int:
    """The memory the tables hold: keys, values and all they reach, each object counted once."""
    seen: set[int] = set()
    total = 0
    todo: list[Any] = list(tables)
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            todo += obj.keys()
            todo += obj.values()
        elif isinstance(obj, list | tuple):
            todo += obj
    return total


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            lambda i: {
                "kind": "X",
                "metadata": {
                    "name": f"o{i}",
                    "labels": {"app": f"a{i}", "tier": "web"},
                    "annotations": {"note": f"n{i}"},
                },
            },
            id="small-dicts",
        ),
        pytest.param(
            lambda i: {"kind": "X", "metadata": {"namespace": f"ns{i}", "generateName": f"g{i}"}},
            id="strings",
        ),
        pytest.param(
            lambda i: {**realistic_pod(i), "status": {"phase": "Running", "podIP": f"10.0.{i}"}},
            id="pods",
        ),
    ],
)
def test_sharing_decoder_byte_bound_is_of_memory_not_json(make: Any) -> None:
    """Two generations of ``max_bytes`` each hold at most twice it in memory. A decoded slice
    takes 4–13 times its JSON: bounded by its JSON's bytes, the tables held 4.5–17 times the
    bound (issue 40: bounded in bytes)."""
    bound = 64 << 10
    decoder = SharingDecoder(max_bytes=bound)
    for i in range(3000):
        decoder.decode_object(orjson.dumps(make(i)))
    assert decoder.misses > 3000  # every object left slices of its own in the table
    assert _held(decoder._new, decoder._old) <= 2 * bound
