# Over 500 lines, one concept: decoding API objects straight into the cache's shape.
"""Decoding API objects straight into the cache's shape: managedFields never decoded, repeated
sub-trees decoded once and shared.

Why: decoding a whole pod (≈5.7 KB of JSON, a third of it managedFields) into dicts and then
interning its sub-trees (:class:`~pycm.cache.transform.SubtreeInterner`: walk, ``==``, sorted
``orjson.dumps``) costs about twice the decode alone. Here the JSON is split with msgspec into
raw byte slices (``msgspec.Raw``: a skip-scan, no Python objects built) along a small plan of
paths, and each *shareable* slice is looked up by its bytes in a table of sub-trees already
decoded: identical bytes are identical JSON, so a hit is exact for any resource (built-in or
custom) and costs a hash and a ``memcmp`` — nothing is decoded, allocated or compared
structurally. Only what differs between objects (names, uids, the per-pod token volume, ...) is
ever decoded. ``metadata.managedFields`` is never decoded: a listed object's is left out, a
watched object's handed on as its JSON bytes (the object's writers, for pycm.trace.causes,
decoded only when a handler asks who wrote the event): the informer's transform notes them and
drops the member.

What is shared is stated once, in a plan (:func:`default_plan`). An object of the usual shape
(apiVersion, kind, metadata, spec, status) is split in one scan by a struct generated from the
plan's top level; anything else is split level by level. Either way one interpreter of the plan
assembles the result, so both paths share exactly what the plan says.

A watch event of an object seen before usually changes only its metadata: its tail (spec and
status, looked up whole in watch events) is byte for byte the last event's. Each object's last
tail is remembered with its values; a line ending with it is scanned up to the tail only
(managedFields included, ~2.7 KB of a 5.7 KB pod) and takes the tail's values as they are (see
``SharingDecoder._from_head`` for why that is exact). A list remembers each object's tail values
only (a few references an object, no bytes); an object's first watch event encodes them to
compare with its line (equal bytes decode to equal values, so this is exact too). A line must
end at the event's closing braces for this (the watch reader hands lines without their newline);
any other line is decoded the usual way.

The result is plain dicts and lists, equal to ``orjson.loads`` of the same bytes minus
``metadata.managedFields`` (an object's top-level members come in the usual order, apiVersion,
kind, metadata, spec, status, whatever order they were sent in; JSON gives key order no
meaning, and every other level keeps the order sent); shared sub-trees are the same objects
in several cached objects, so they must never be mutated (the cache's rule anyway).

The table is bounded: two generations, each of at most ``max_entries`` entries (slices, and
objects' tails) and ``max_bytes`` bytes of memory (estimated from the entries' bytes: see
:data:`_SLICE_COST_PER_BYTE`; a bound on their JSON alone let a generation hold five to ten
times its figure in decoded values); a hit in the old
generation is promoted, and when the new one is full, or older than ``max_age_s``, it becomes the
old one (the oldest dropped). So an entry not used for twice that age is gone: under churn the
table holds what the last minutes used rather than filling to its bound over hours (issue 40:
pods made and deleted left their unique slices until 32 768 entries had piled up). Dropping only
loses sharing, never correctness.

Numbers msgspec refuses (``1e400``: out of a double's range; orjson refuses them too) raise
:class:`~pycm.kube.errors.KubeError` naming the problem: the list or watch fails clearly and the
reflector backs off and retries, as for any undecodable body.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec
import orjson
from msgspec import UNSET, UnsetType

from pycm.kube.errors import KubeError

__all__ = [
    "DEFAULT_MAX_AGE_S",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "SharingDecoder",
    "list_head",
]

Obj = dict[str, Any]

DEFAULT_MAX_ENTRIES = 32_768
"""Entries per table generation. Watched objects' tails are remembered whole (one entry per
object updated, ~3 KB of tail bytes for a pod): two generations of this size keep them for about
10k–30k objects between two updates of the same object; past that, sharing degrades
gracefully. The bound keeps a cluster of unique objects from growing the table without end."""

DEFAULT_MAX_BYTES = 96 << 20
"""Estimated bytes of memory per table generation: ~27k watched pods' tails (~3.5 KB each with
what indexes them) fit in one, as many as the entry bound lets in (:data:`DEFAULT_MAX_ENTRIES`).
At 32 MiB (~9k pods) a 10k-pod watch turned its generations over before an object's next event
came, and lost its sharing: ``informers.watch`` fell from ~28k to ~18k events/s."""

DEFAULT_MAX_AGE_S = 300.0
"""A generation's age at which it turns old (checked once per list page or watch read)."""

# What an entry costs the table, estimated from its bytes (``max_bytes`` bounds memory, not
# JSON). A slice's value is the table's own (decoded on a miss): measured on pods, a slice with
# its key takes 4–13 times its JSON — small dicts and strings the most — below this entry cost
# plus this much per byte. A tail's values are the cached object's own members (they leave with
# it: a DELETED event forgets its tail), so a tail costs its bytes and the tuples indexing them.
_ENTRY_COST = 160  # the table's slot, the key's bytes object, the value's own header
_SLICE_COST_PER_BYTE = 10
_TAIL_COST = 400  # a tail's spans and values tuples

_SPLIT_DICT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_SPLIT_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_ANY = msgspec.json.Decoder()


class _ListEnvelope(msgspec.Struct):
    """A List's body: its metadata and its items as raw slices (kind and apiVersion skipped)."""

    items: list[msgspec.Raw] | None = None
    metadata: dict[str, Any] | None = None


class _EventEnvelope(msgspec.Struct):
    """One watch line: the type and the object as a raw slice."""

    type: str = ""
    object: msgspec.Raw = msgspec.Raw(b"")  # (``Raw | None`` would only accept null)


_LIST = msgspec.json.Decoder(_ListEnvelope)


class _ListHead(msgspec.Struct):
    metadata: dict[str, Any] | None = None


_HEAD = msgspec.json.Decoder(_ListHead)


def list_head(body: bytes) -> Obj | None:
    """A List's metadata (``continue``, ``resourceVersion``) read from the bytes before its
    items, without scanning the items — when the server sends ``metadata`` first, as
    kube-apiserver does; None when it cannot be read so (the caller decodes the page first)."""
    at = body.find(b'"items":')
    if at < 0:
        return None
    try:
        head = _HEAD.decode(body[:at] + b'"items":null}')
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return head.metadata


_EVENT = msgspec.json.Decoder(_EventEnvelope)
_SPLIT_ITEMS = msgspec.json.Decoder(list[dict[str, msgspec.Raw]])
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError)
# A slice's bytes, for a table key: ``bytes(raw)`` parses its arguments and asks for a full
# buffer description, a quarter more instructions than joining a one-tuple (~1000 vs ~760).
_to_bytes = b"".join


class _Plan:
    """How to decode one place of an object: the one statement of what is shared. The usual
    shape's single scan is generated from it (:func:`_first_scan`), and one interpreter
    (:meth:`SharingDecoder._value`, :meth:`SharingDecoder._members`) serves that fast path and
    the generic walk of unusual shapes alike.

    ``share``: look the slice's bytes up in the table first (a hit is the whole answer; a miss
    is decoded by the rest of the plan and remembered whole).
    ``share_updates``: for a top-level member of a watched object only, compared with the same
    object's last event (its remembered tail) rather than the table: an update leaves most of
    an object byte for byte as it was (a pod's spec), while a slice unique to one object (a
    pod's spec holds its token volume) is pure cost to hash and hold in the table; a list sees
    each object once and does not compare these. (Neither does the generic walk, for unusual
    shapes.)
    ``keys`` (a dict): split an object and decode each member by its own plan (``other`` for
    members not named); ``None`` there means decode plainly (per object: names, uids, ...),
    :data:`_DROP` means leave out (managedFields).
    ``each``: split an array and decode each element by that plan. Neither: decode plainly.
    """

    __slots__ = ("each", "keys", "other", "share", "share_updates", "special")

    def __init__(
        self,
        *,
        share: bool = False,
        share_updates: bool = False,
        keys: Mapping[str, _Plan | None] | None = None,
        other: _Plan | None = None,
        each: _Plan | None = None,
    ) -> None:
        self.share = share
        self.share_updates = share_updates
        self.keys: dict[str, _Plan | None] | None = dict(keys) if keys is not None else None
        self.other = other
        self.each = each
        # The named members that differ from ``other``: the interpreter tests this set, cheaper
        # than a ``keys.get`` for every member. (A plan is not changed once made.)
        self.special = frozenset(n for n, sub in (keys or {}).items() if sub is not other)


_DROP = _Plan()  # a member left out
# managedFields of a watched object: kept as its JSON bytes, for the informer to note as the
# object's writers (pycm.trace.causes) before its transform drops the member; they are decoded
# only if a handler asks who wrote the event (most never are). A listed object's are left out:
# its event is the informer's list, whoever wrote it.
_WRITER = _Plan()


def _listing_plan(plan: _Plan) -> _Plan:
    """``plan`` with a listed object's managedFields left out (see :data:`_WRITER`)."""
    meta = (plan.keys or {}).get("metadata")
    if meta is None or meta.keys is None or meta.keys.get("managedFields") is not _WRITER:
        return plan
    listed_meta = _Plan(
        share=meta.share,
        share_updates=meta.share_updates,
        keys={**meta.keys, "managedFields": _DROP},
        other=meta.other,
        each=meta.each,
    )
    assert plan.keys is not None
    return _Plan(
        share=plan.share,
        share_updates=plan.share_updates,
        keys={**plan.keys, "metadata": listed_meta},
        other=plan.other,
        each=plan.each,
    )


_SHARED = _Plan(share=True)  # looked up whole; on a miss decoded plainly and remembered


def _object_meta() -> _Plan:
    return _Plan(
        keys={
            "managedFields": _WRITER,
            "labels": _SHARED,
            "annotations": _SHARED,
            "ownerReferences": _SHARED,
            "finalizers": _SHARED,
            "namespace": _SHARED,
            "generateName": _SHARED,
        },
        other=None,  # name, uid, resourceVersion, timestamps: per object
    )


def _pod_spec_keys() -> dict[str, _Plan | None]:
    # A container differs between pods only by the per-pod token volume's mount: split it,
    # share each member (and each mount); a volume likewise, but for its name. The lists and
    # containers are not looked up whole: the token volume makes them differ between any two
    # pods, so hashing them whole is pure cost. Names are decoded, not looked up (cheaper).
    container = _Plan(
        keys={"name": None, "volumeMounts": _Plan(each=_SHARED)},
        other=_SHARED,
    )
    containers = _Plan(each=container)
    volume = _Plan(keys={"name": None}, other=_SHARED)
    return {
        "containers": containers,
        "initContainers": containers,
        "ephemeralContainers": containers,
        "volumes": _Plan(each=volume),
        "nodeName": None,
        "hostname": None,
    }


def default_plan() -> _Plan:
    """The plan for any resource, tuned for pods and the workloads that embed a pod template
    (``spec.template``): metadata split, the pod spec split down to container members, the
    spec compared whole with the object's last one in watch events, the status looked up always."""
    meta = _object_meta()
    pod_spec = _Plan(keys=_pod_spec_keys(), other=_SHARED)
    template = _Plan(share=True, keys={"metadata": meta, "spec": pod_spec}, other=_SHARED)
    spec = _Plan(share_updates=True, keys=_pod_spec_keys() | {"template": template}, other=_SHARED)
    return _Plan(
        keys={"apiVersion": None, "kind": None, "metadata": meta, "spec": spec, "status": _SHARED},
        other=_SHARED,
    )


# How a member of the first scan arrives (see _first_scan).
_DECODED, _PARTS, _WHOLE, _RAW, _LEFT_OUT = range(5)
_Field = tuple[str, "_Plan | None", int]
# A watched object's last tail: its bytes, each member's (start, end) in them and its value, in
# the order of SharingDecoder._tail (see SharingDecoder._from_head). A listed object's entry has
# no bytes yet (b""): they are encoded from the values when a watch event first needs them.
_Tail = tuple[bytes, tuple[tuple[int, int], ...], tuple[Any, ...]]


def _first_scan(plan: _Plan, *, watched: bool) -> tuple[type[msgspec.Struct], list[_Field]]:
    """The usual shape of an object under ``plan``, split in one msgspec scan: a struct with a
    field per member the plan names (in the plan's order: the top-level order of the result),
    and how each arrives. Members decoded plainly arrive decoded; members split by ``keys``
    arrive as their raw members (unless looked up whole first); others as one raw slice. Any
    member the plan does not name makes the scan fail, and the object takes the generic walk.
    """
    assert plan.keys is not None
    fields: list[tuple[str, Any, Any]] = []
    how: list[_Field] = []
    for name, sub in plan.keys.items():
        if sub is None:
            fields.append((name, Any, UNSET))
            how.append((name, sub, _DECODED))
        elif sub is _DROP:
            fields.append((name, msgspec.Raw | UnsetType, UNSET))
            how.append((name, sub, _LEFT_OUT))
        elif sub.share or (watched and sub.share_updates) or sub.keys is None:
            fields.append((name, msgspec.Raw | UnsetType, UNSET))
            how.append((name, sub, _WHOLE if sub.share or sub.share_updates else _RAW))
        else:
            fields.append((name, dict[str, msgspec.Raw] | UnsetType, UNSET))
            how.append((name, sub, _PARTS))
    kind = "Watched" if watched else "Listed"
    struct = msgspec.defstruct(f"_{kind}Top", fields, forbid_unknown_fields=True)
    return struct, how


def _getter(names: tuple[str, ...]) -> Callable[[Obj], tuple[Any, ...]]:
    """Those members of an object as a tuple (KeyError if one is missing), in one C call."""
    if len(names) >= 2:
        getter: Callable[[Obj], tuple[Any, ...]] = operator.itemgetter(*names)
        return getter
    return lambda obj: tuple(obj[n] for n in names)


class SharingDecoder:
    """Decodes list pages, watch lines and objects, sharing identical sub-trees across them."""

    def __init__(
        self,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        plan: _Plan | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        monotonic_ns: Callable[[], int] = time.monotonic_ns,
    ):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._max_age_ns = int(max_age_s * 1e9)
        self._monotonic_ns = monotonic_ns
        self._plan = plan or default_plan()
        listed, self._listed_how = _first_scan(_listing_plan(self._plan), watched=False)
        watched, self._watched = _first_scan(self._plan, watched=True)
        usual_list = msgspec.defstruct(
            "_UsualList",
            [("items", list[listed] | None, None), ("metadata", dict[str, Any] | None, None)],  # type: ignore[valid-type]
        )
        usual_event = msgspec.defstruct(
            "_UsualEvent", [("type", str, ""), ("object", watched | UnsetType, UNSET)]
        )
        # A watched object's tail: its last members looked up whole (spec, status), in the
        # plan's order; the head event holds the rest (see _from_tail).
        tail: list[str] = []
        for name, _, arrives in reversed(self._watched):
            if arrives != _WHOLE:
                break
            tail.insert(0, name)
        self._tail = tuple(tail)
        self._tail_values = _getter(self._tail)
        self._tail_how = [
            (name, f',"{name}":'.encode(), plan)
            for name, plan, _ in self._watched
            if name in tail and plan is not None
        ]
        self._head_how = [f for f in self._watched if f[0] not in tail]
        head = msgspec.defstruct(
            "_WatchedHead",
            [
                (f.name, f.type, UNSET)
                for f in msgspec.structs.fields(watched)
                if f.name not in tail
            ],
            forbid_unknown_fields=True,
        )
        head_event = msgspec.defstruct(
            "_HeadEvent",
            [("type", str, ""), ("object", head | UnsetType, UNSET)],
            forbid_unknown_fields=True,
        )
        self._head_event: msgspec.json.Decoder[Any] = msgspec.json.Decoder(head_event)
        self._top: msgspec.json.Decoder[Any] = msgspec.json.Decoder(listed)
        self._usual_list: msgspec.json.Decoder[Any] = msgspec.json.Decoder(usual_list)
        self._usual_event: msgspec.json.Decoder[Any] = msgspec.json.Decoder(usual_event)
        self._new: dict[bytes, Any] = {}
        self._old: dict[bytes, Any] = {}
        self._new_bytes = 0
        self._born_ns = monotonic_ns()
        self.misses = 0  # slices decoded for the table (hits are not counted: the hot path)

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    # -- entry points ---------------------------------------------------------------------------

    def decode_object(self, data: bytes | msgspec.Raw) -> Obj:
        """One object (a JSON object's bytes)."""
        try:
            try:
                top = self._top.decode(data)
            except msgspec.ValidationError:  # another shape: the generic walk
                obj = self._value(data, self._plan)
            else:
                obj = self._object(top, self._listed_how)
        except _DECODE_ERRORS as e:
            raise KubeError(f"undecodable object: {e}") from None
        if type(obj) is not dict:
            raise KubeError("undecodable object: not a JSON object")
        return obj

    def list_head(self, body: bytes) -> Obj | None:
        """See :func:`list_head`."""
        return list_head(body)

    def decode_list(self, body: bytes) -> tuple[list[Obj], Obj]:
        """A List body: its items (each decoded as :meth:`decode_object`) and its metadata."""
        self._age()
        try:
            usual = self._usual_list.decode(body)
        except msgspec.ValidationError:
            pass  # an item of another shape (or a bad body): one by one below
        except msgspec.DecodeError as e:
            raise KubeError(f"undecodable list: {e}") from None
        else:
            try:
                to_obj = self._object
                how = self._listed_how
                items = [to_obj(top, how) for top in usual.items or ()]
                if self._tail:
                    self._listed(items)
                return items, usual.metadata or {}
            except _DECODE_ERRORS as e:
                raise KubeError(f"undecodable object: {e}") from None
        try:
            envelope = _LIST.decode(body)
        except _DECODE_ERRORS as e:
            raise KubeError(f"undecodable list: {e}") from None
        decode = self.decode_object
        return [decode(item) for item in envelope.items or ()], envelope.metadata or {}

    def decode_events(self, lines: Iterable[bytes]) -> list[tuple[str, Obj]]:
        """Watch lines (each ``{"type": ..., "object": ...}``) into (type, object) pairs; an
        ERROR event's object (a Status) is decoded plainly."""
        self._age()
        out: list[tuple[str, Obj]] = []
        decode = self.decode_object
        usual_event = self._usual_event.decode
        watched = self._watched_object
        from_head = self._from_head
        tails = bool(self._tail)
        for line in lines:
            hint = entry = None
            if tails:
                at = line.find(b'"name":"')
                if at >= 0:
                    hint = line[at : line.find(b'"', at + 8)]
                    entry = self._new.get(hint)  # (any line may start a new generation)
                    if entry is None:
                        entry = self._tail_entry(hint)
                    if entry is not None and not entry[0]:
                        entry = self._encoded(hint, entry)
                    if entry is not None and line.endswith(entry[0]):
                        pair = from_head(line, entry)
                        if pair is not None:
                            out.append(pair)
                            if pair[0] == "DELETED":
                                self._forget(hint)
                            continue
            try:
                usual = usual_event(line)
            except _DECODE_ERRORS:
                pass  # another shape, or undecodable: told apart below
            else:
                if usual.object is not UNSET and usual.type != "ERROR":
                    try:
                        out.append((usual.type, watched(usual.object, hint, entry)))
                    except _DECODE_ERRORS as e:
                        raise KubeError(f"undecodable watch event: {e}") from None
                    if usual.type == "DELETED" and hint is not None:
                        self._forget(hint)
                    continue
            try:
                event = _EVENT.decode(line)
            except _DECODE_ERRORS as e:
                raise KubeError(f"undecodable watch event: {e}") from None
            if not len(event.object):
                raise KubeError("malformed watch event (no object)")
            if event.type == "ERROR":
                try:
                    status = _ANY.decode(event.object)
                except _DECODE_ERRORS as e:
                    raise KubeError(f"undecodable watch event: {e}") from None
                if type(status) is not dict:
                    raise KubeError("malformed watch event (no object)")
                out.append((event.type, status))
            else:
                out.append((event.type, decode(event.object)))
        return out

    # -- watched objects: the tail of an update seen before --------------------------------------
    #
    # An update usually leaves an object's tail (``,"spec":{...},"status":{...}}}``: the members
    # the plan looks up whole in watch events, at the end of the line as kube-apiserver and the
    # emulator send them) byte for byte as the object's last event sent it; scanning and hashing
    # it again is most of an event's cost (~3 KB of a 5.7 KB pod). So each object's last tail
    # is remembered in the table, with its members' values, under a hint found in the line (its
    # first ``"name":"...``: the object's name, as servers send metadata). A line ending with
    # those bytes is decoded as its head (the line up to the tail, closed by ``}}``) plus the
    # remembered values. Exact, whatever the hint finds: the head must decode as an event whose
    # object has a member and no tail member (the head struct allows the event's type and
    # object only, and the object's non-tail members only), so it ends just after a member
    # value inside the event's object; from there the tail parses as it did before: each member
    # a complete JSON value, then the two closing braces. Anything else takes the usual path,
    # where a tail member is still compared with the object's last one before the table.

    def _forget(self, hint: bytes) -> None:
        """A deleted object's tail: nothing will end with it again (a new object of the name
        starts afresh), so it leaves the table at once rather than when its generation is
        dropped — under churn (pods made and deleted), those tails were most of the table."""
        self._new.pop(hint, None)
        self._old.pop(hint, None)

    def _tail_entry(self, hint: bytes) -> _Tail | None:
        """The old generation's tail for ``hint``, promoted; None if there is none."""
        entry: _Tail | None = self._old.get(hint)
        if entry is not None:
            self._remember(hint, entry, len(entry[0]))
        return entry

    def _from_head(self, line: bytes, entry: _Tail) -> tuple[str, Obj] | None:
        """The event of ``line``, which ends with ``entry``'s tail, from its head; None when
        the head is not an event's object of the usual shape (the usual path decides)."""
        try:
            head = self._head_event.decode(line[: len(line) - len(entry[0])] + b"}}")
        except _DECODE_ERRORS:
            return None
        top = head.object
        if top is UNSET or head.type == "ERROR":
            return None
        obj: Obj = {}
        try:
            for (name, plan, arrives), value in zip(
                self._head_how, msgspec.structs.astuple(top), strict=True
            ):
                if value is UNSET:
                    continue
                if arrives is _DECODED:
                    obj[name] = value
                elif arrives is not _LEFT_OUT:
                    obj[name] = self._arrived(value, plan, arrives)
        except _DECODE_ERRORS:
            return None
        if not obj:  # no member before the tail (``{,"spec":...`` is not JSON), or none kept
            return None
        obj.update(zip(self._tail, entry[2], strict=True))
        return head.type, obj

    def _watched_object(self, top: msgspec.Struct, hint: bytes | None, entry: _Tail | None) -> Obj:
        """A watched object by its first scan; a tail member equal to the object's last one
        (``entry``) is its last value, others are decoded by the plan (a ``share`` member
        looked up in the table). The tail is remembered under ``hint`` when it is complete."""
        obj = self._object(top, self._head_how)
        last_tail, last_spans, last_values = entry if entry is not None else (b"", (), ())
        pieces: list[Any] = []
        spans: list[tuple[int, int]] = []
        values: list[Any] = []
        at = 0
        for i, (name, sep, plan) in enumerate(self._tail_how):
            raw = getattr(top, name)
            if raw is UNSET:
                continue
            at += len(sep)
            size = len(raw)
            value: Any = None
            if last_spans:
                start, end = last_spans[i]
                if end - start == size and last_tail.startswith(raw, start):
                    value = last_values[i]
            if value is None:
                value = self._looked_up(raw, plan) if plan.share else self._build(raw, plan)
            obj[name] = value
            values.append(value)
            spans.append((at, at + size))
            pieces += (sep, raw)
            at += size
        if hint is not None and len(values) == len(self._tail):
            pieces.append(b"}}")
            tail_bytes = _to_bytes(pieces)
            self._remember(hint, (tail_bytes, tuple(spans), tuple(values)), len(tail_bytes))
        return obj

    def _encoded(self, hint: bytes, entry: _Tail) -> _Tail | None:
        """A listed object's entry with its tail's bytes, encoded from its values: compared
        with a line's bytes, a match is as exact as the line's own (decoding what is encoded
        gives the same values back); a server that formats otherwise only misses it. (orjson:
        a quarter fewer instructions than msgspec's encoder on a pod spec, and the emulator's
        own format.)"""
        pieces: list[bytes] = []
        spans: list[tuple[int, int]] = []
        at = 0
        try:
            for (_, sep, _), value in zip(self._tail_how, entry[2], strict=True):
                data = orjson.dumps(value)
                at += len(sep)
                spans.append((at, at + len(data)))
                pieces += (sep, data)
                at += len(data)
        except TypeError:  # (an integer past 64 bits: orjson refuses it) never compared again
            self._new.pop(hint, None)
            return None
        pieces.append(b"}}")
        encoded = (_to_bytes(pieces), tuple(spans), entry[2])
        self._remember(hint, encoded, len(encoded[0]))
        return encoded

    def _listed(self, items: list[Obj]) -> None:
        """Each listed object's tail values remembered under its name's hint (no bytes: a few
        references an object), so its first watch event can take the head path too."""
        values_of = self._tail_values
        remember = self._remember
        for obj in items:
            try:
                hint = b'"name":"' + obj["metadata"]["name"].encode()
                values = values_of(obj)
            except (KeyError, TypeError, AttributeError):  # no name (a string), or no tail
                continue
            remember(hint, (b"", (), values), 0)

    # -- the plan's interpreter -----------------------------------------------------------------

    def _object(self, top: msgspec.Struct, how: list[_Field]) -> Obj:
        """An object split by its first scan (:func:`_first_scan`), assembled by the plan."""
        obj: Obj = {}
        for (name, plan, arrives), value in zip(how, msgspec.structs.astuple(top), strict=False):
            if value is UNSET:
                continue
            if arrives is _DECODED:
                obj[name] = value
            elif arrives is _PARTS:
                assert plan is not None
                obj[name] = self._members(value, plan)
            elif arrives is _WHOLE:
                assert plan is not None
                obj[name] = self._remembered(value, plan)
            elif arrives is _RAW:
                assert plan is not None
                obj[name] = self._build(value, plan)
        return obj

    def _arrived(self, value: Any, plan: _Plan | None, arrives: int) -> Any:
        """A first scan's member that is not decoded yet, by how it arrives (as in
        :meth:`_object`, which keeps its own branches: a call less for every listed object)."""
        assert plan is not None
        if arrives is _PARTS:
            return self._members(value, plan)
        if arrives is _WHOLE:
            return self._remembered(value, plan)
        return self._build(value, plan)

    def _value(self, raw: Any, plan: _Plan) -> Any:
        """The decoded value of ``raw`` by ``plan``."""
        if plan.share:
            return self._remembered(raw, plan)
        return self._build(raw, plan)

    def _remembered(self, raw: Any, plan: _Plan) -> Any:
        """The table's value for these bytes, else built by the plan now and remembered."""
        key = _to_bytes((raw,))
        value = self._new.get(key)
        if value is not None:
            return value
        value = self._old.get(key)
        if value is None:
            self.misses += 1
            value = self._build(raw, plan)
        self._remember(key, value)
        return value

    def _looked_up(self, raw: Any, plan: _Plan) -> Any:
        """A watched object's changed tail member (its status, as a rule): the table's value
        for these bytes, else built now but not remembered. A status that changed is, as a
        rule, this object's alone (its pod IP, its times, its conditions): remembered, it was
        never looked up again, and under churn (1,000 such a minute) those entries grew the
        manager by ~1.3 MB a minute until their generation was dropped, half an hour later."""
        key = _to_bytes((raw,))
        value = self._new.get(key)
        if value is not None:
            return value
        value = self._old.get(key)
        if value is not None:
            self._remember(key, value)  # (promoted, as any hit of the old generation)
            return value
        self.misses += 1
        return self._build(raw, plan)

    def _build(self, raw: Any, plan: _Plan) -> Any:
        if plan.keys is not None:
            try:
                parts = _SPLIT_DICT.decode(raw)
            except msgspec.ValidationError:  # not an object here: take it as it is
                return _ANY.decode(raw)
            return self._members(parts, plan)
        each = plan.each
        if each is not None:
            if each.keys is not None and not each.share:
                try:  # a list of objects, split to their members in one scan
                    elements = _SPLIT_ITEMS.decode(raw)
                except msgspec.ValidationError:
                    pass  # not all objects: element by element below
                else:
                    return self._objects(elements, each)
            try:
                items = _SPLIT_LIST.decode(raw)
            except msgspec.ValidationError:  # not a list here: take it as it is
                return _ANY.decode(raw)
            out = []
            if each is _SHARED:  # (volume mounts: the lookup inlined, a call only on a miss)
                seen = self._new.get
                for item in items:
                    key = _to_bytes((item,))
                    value = seen(key)
                    if value is None:
                        value = self._miss(key, item)
                        seen = self._new.get  # (a new generation may have started)
                    out.append(value)
                return out
            build = self._remembered if each.share else self._build
            for item in items:  # (no comprehension: its closure costs every call)
                out.append(build(item, each))
            return out
        return _ANY.decode(raw)

    def _members(self, parts: dict[str, Any], plan: _Plan) -> Obj:
        return self._objects((parts,), plan)[0]

    def _objects(self, elements: Iterable[dict[str, Any]], plan: _Plan) -> list[Obj]:
        """Split objects (their members as raw slices) assembled by ``plan``: the hot path of
        every list and watch, so lookups are inlined (a call only on a miss) and a list of
        objects (containers, volumes) is one call."""
        keys = plan.keys
        assert keys is not None
        special = plan.special
        other = plan.other
        decode = _ANY.decode
        shared = _SHARED
        to_bytes = _to_bytes
        objs: list[Obj] = []
        for parts in elements:
            seen = self._new.get
            out: Obj = {}
            for name, raw in parts.items():
                sub = keys[name] if name in special else other
                if sub is shared:
                    key = to_bytes((raw,))
                    value = seen(key)
                    if value is None:
                        value = self._miss(key, raw)
                        seen = self._new.get  # (as below: the miss may have turned one)
                    out[name] = value
                elif sub is None:
                    out[name] = decode(raw)
                elif sub is _WRITER:
                    out[name] = bytes(raw)  # (not decoded here: see _WRITER)
                elif sub is not _DROP:
                    out[name] = self._remembered(raw, sub) if sub.share else self._build(raw, sub)
                    seen = self._new.get  # (a miss may have started a new generation)
            objs.append(out)
        return objs

    def _miss(self, key: bytes, raw: Any) -> Any:
        """Not in the new generation: promote it from the old one, or decode and remember it."""
        value = self._old.get(key)
        if value is None:
            self.misses += 1
            value = _ANY.decode(raw)
        self._remember(key, value)
        return value

    def _remember(self, key: bytes, value: Any, tail_bytes: int = -1) -> None:
        """Into the new generation (``tail_bytes``: the length of the tail's bytes when the value
        is an object's tail, else -1: a slice), which turns old when full (entries or bytes)."""
        new = self._new
        new[key] = value
        if tail_bytes < 0:
            self._new_bytes += _ENTRY_COST + len(key) * _SLICE_COST_PER_BYTE
        else:
            self._new_bytes += _ENTRY_COST + _TAIL_COST + len(key) + tail_bytes
        if len(new) >= self.max_entries or self._new_bytes >= self.max_bytes:
            self._turn()

    def _age(self) -> None:
        """Turn the new generation old once it is ``max_age_s`` old (see the module docstring)."""
        if self._monotonic_ns() - self._born_ns >= self._max_age_ns:
            self._turn()

    def _turn(self) -> None:
        self._old, self._new = self._new, {}
        self._new_bytes = 0
        self._born_ns = self._monotonic_ns()
