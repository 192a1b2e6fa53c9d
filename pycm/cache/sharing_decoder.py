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
ever decoded. ``metadata.managedFields`` is skipped as a raw slice and never materialised.

The result is plain dicts and lists, equal to ``orjson.loads`` of the same bytes minus
``metadata.managedFields`` (an object's top-level members come in the usual order, apiVersion,
kind, metadata, spec, status, whatever order they were sent in; JSON gives key order no
meaning, and every other level keeps the order sent); shared sub-trees are the same objects
in several cached objects, so they must never be mutated (the cache's rule anyway).

The table is bounded: two generations of at most ``max_entries`` slices each; a hit in the old
generation is promoted, and when the new one is full it becomes the old one (the oldest
dropped). Dropping only loses sharing, never correctness.

Numbers msgspec refuses (``1e400``: out of a double's range; orjson refuses them too) raise
:class:`~pycm.kube.errors.KubeError` naming the problem: the list or watch fails clearly and the
reflector backs off and retries, as for any undecodable body.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from pycm.kube.errors import KubeError

__all__ = ["DEFAULT_MAX_ENTRIES", "SharingDecoder", "list_head"]

Obj = dict[str, Any]

DEFAULT_MAX_ENTRIES = 32_768
"""Slices per table generation. Watched objects' specs are remembered whole (one entry per
object updated, ~3 KB of key for a pod): two generations of this size keep them for about
10k–30k objects between two updates of the same object; past that, sharing degrades
gracefully. The bound keeps a cluster of unique objects from growing the table without end."""

_SPLIT_DICT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_SPLIT_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_ANY = msgspec.json.Decoder()


class _Top(msgspec.Struct, forbid_unknown_fields=True):
    """The usual shape of an object, split in one scan: metadata and spec members as raw
    slices. Any other top-level member makes it fail, and the object takes the generic walk."""

    apiVersion: str | UnsetType = UNSET
    kind: str | UnsetType = UNSET
    metadata: dict[str, msgspec.Raw] | UnsetType = UNSET
    spec: dict[str, msgspec.Raw] | UnsetType = UNSET
    status: msgspec.Raw | UnsetType = UNSET


_TOP = msgspec.json.Decoder(_Top)


class _ListEnvelope(msgspec.Struct):
    """A List's body: its metadata and its items as raw slices (kind and apiVersion skipped)."""

    items: list[msgspec.Raw] | None = None
    metadata: dict[str, Any] | None = None


class _UsualList(msgspec.Struct):
    """A List whose items all have the usual shape: split in the same single scan."""

    items: list[_Top] | None = None
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


_USUAL_LIST = msgspec.json.Decoder(_UsualList)
_CONTAINER_SPLIT = frozenset({"volumeMounts"})
_VOLUME_SPLIT: frozenset[str] = frozenset()
_EVENT = msgspec.json.Decoder(_EventEnvelope)


class _WatchedTop(msgspec.Struct, forbid_unknown_fields=True):
    """:class:`_Top` for a watched object: its spec kept whole, to be looked up whole first.

    Why: an update (status, labels, annotations) leaves the spec byte for byte as it was, so
    the spec of the object's previous version — remembered by its bytes — is the answer,
    without splitting it or looking up its parts. A list does not do this: a pod's spec is
    unique to it (its token volume), and listing sees each object once."""

    apiVersion: str | UnsetType = UNSET
    kind: str | UnsetType = UNSET
    metadata: dict[str, msgspec.Raw] | UnsetType = UNSET
    spec: msgspec.Raw | UnsetType = UNSET
    status: msgspec.Raw | UnsetType = UNSET


class _UsualEvent(msgspec.Struct):
    """A watch line whose object has the usual shape: split in the same single scan."""

    type: str = ""
    object: _WatchedTop | UnsetType = UNSET


_USUAL_EVENT = msgspec.json.Decoder(_UsualEvent)


class _Plan:
    """How to decode one place of an object.

    ``share``: look the slice's bytes up in the table first (a hit is the whole answer).
    ``keys`` (a dict): split an object and decode each member by its own plan (``other`` for
    members not named; ``None`` there means decode plainly, :data:`_DROP` means leave out).
    ``each``: split an array and decode each element by that plan. Neither: decode plainly.
    """

    __slots__ = ("each", "keys", "other", "share")

    def __init__(
        self,
        *,
        share: bool = False,
        keys: Mapping[str, _Plan | None] | None = None,
        other: _Plan | None = None,
        each: _Plan | None = None,
    ) -> None:
        self.share = share
        self.keys: dict[str, _Plan | None] | None = dict(keys) if keys is not None else None
        self.other = other
        self.each = each


_DROP = _Plan()  # a member left out (managedFields)
_SHARED = _Plan(share=True)  # looked up whole; on a miss decoded plainly and remembered


def _object_meta() -> _Plan:
    return _Plan(
        keys={
            "managedFields": _DROP,
            "labels": _SHARED,
            "annotations": _SHARED,
            "ownerReferences": _SHARED,
            "finalizers": _SHARED,
            "namespace": _SHARED,
            "generateName": _SHARED,
        },
        other=None,  # name, uid, resourceVersion, timestamps: per object
    )


def _pod_spec() -> _Plan:
    # A container differs between pods only by the per-pod token volume's mount: split it,
    # share each member (and each mount); a volume likewise by its name.
    container = _Plan(
        share=True,
        keys={"volumeMounts": _Plan(share=True, each=_SHARED)},
        other=_SHARED,
    )
    containers = _Plan(share=True, each=container)
    volume = _Plan(share=True, keys={"name": None}, other=_SHARED)
    return _Plan(
        keys={
            "containers": containers,
            "initContainers": containers,
            "ephemeralContainers": containers,
            "volumes": _Plan(share=True, each=volume),
            "nodeName": None,
            "hostname": None,
        },
        other=_SHARED,
    )


def default_plan() -> _Plan:
    """The plan for any resource, tuned for pods and the workloads that embed a pod template
    (``spec.template``): metadata split, the pod spec split down to container members."""
    meta = _object_meta()
    pod_spec = _pod_spec()
    template = _Plan(share=True, keys={"metadata": meta, "spec": pod_spec}, other=_SHARED)
    spec = _Plan(keys=dict(pod_spec.keys or {}), other=_SHARED)
    assert spec.keys is not None
    spec.keys["template"] = template
    return _Plan(keys={"metadata": meta, "spec": spec}, other=_SHARED)


_SPLIT_ITEMS = msgspec.json.Decoder(list[dict[str, msgspec.Raw]])
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError)
# Members of metadata worth sharing (the rest is per object: name, uid, resourceVersion, ...).
_META_SHARED = frozenset(
    {"labels", "annotations", "ownerReferences", "finalizers", "namespace", "generateName"}
)
# Members of a pod spec holding lists whose elements differ per pod only in part.
_SPEC_CONTAINERS = frozenset({"containers", "initContainers", "ephemeralContainers"})
_SPEC_PER_OBJECT = frozenset({"nodeName", "hostname"})


class SharingDecoder:
    """Decodes list pages, watch lines and objects, sharing identical sub-trees across them."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES, plan: _Plan | None = None):
        self.max_entries = max_entries
        self._plan = plan or default_plan()
        spec = (self._plan.keys or {}).get("spec")
        template = (spec.keys or {}).get("template") if spec is not None else None
        self._template_plan = template or _SHARED
        self._new: dict[bytes, Any] = {}
        self._old: dict[bytes, Any] = {}
        self.misses = 0  # slices decoded for the table (hits are not counted: the hot path)

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    # -- entry points ---------------------------------------------------------------------------

    def decode_object(self, data: bytes | msgspec.Raw) -> Obj:
        """One object (a JSON object's bytes)."""
        try:
            try:
                top = _TOP.decode(data)
            except msgspec.ValidationError:  # another shape: the generic walk
                obj = self._decode(data, self._plan)
            else:
                obj = self._object(top)
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
        try:
            usual = _USUAL_LIST.decode(body)
        except msgspec.ValidationError:
            pass  # an item of another shape (or a bad body): one by one below
        except msgspec.DecodeError as e:
            raise KubeError(f"undecodable list: {e}") from None
        else:
            try:
                to_obj = self._object
                return [to_obj(top) for top in usual.items or ()], usual.metadata or {}
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
        out: list[tuple[str, Obj]] = []
        decode = self.decode_object
        to_obj = self._object
        for line in lines:
            try:
                usual = _USUAL_EVENT.decode(line)
            except _DECODE_ERRORS:
                pass  # another shape, or undecodable: told apart below
            else:
                if usual.object is not UNSET and usual.type != "ERROR":
                    try:
                        out.append((usual.type, to_obj(usual.object)))
                    except _DECODE_ERRORS as e:
                        raise KubeError(f"undecodable watch event: {e}") from None
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

    # -- the usual shape, inlined ---------------------------------------------------------------

    def _object(self, top: _Top | _WatchedTop) -> Obj:
        # Hot path (every object of a list or watch): lookups inlined, a call only on a miss.
        obj: Obj = {}
        if top.apiVersion is not UNSET:
            obj["apiVersion"] = top.apiVersion
        if top.kind is not UNSET:
            obj["kind"] = top.kind
        seen = self._new.get
        miss = self._miss
        decode = _ANY.decode
        if top.metadata is not UNSET:
            meta: Obj = {}
            for name, raw in top.metadata.items():
                if name in _META_SHARED:
                    key = bytes(raw)
                    value = seen(key)
                    meta[name] = miss(key, raw) if value is None else value
                elif name != "managedFields":
                    meta[name] = decode(raw)
            obj["metadata"] = meta
        spec_parts = top.spec
        if spec_parts is not UNSET:
            if isinstance(spec_parts, dict):
                obj["spec"] = self._spec(spec_parts)
            else:  # a watched object's spec, whole: most updates leave it as it was
                key = bytes(spec_parts)
                value = self._new.get(key)
                if value is None:
                    value = self._old.get(key)
                    if value is None:
                        value = self._spec(_SPLIT_DICT.decode(spec_parts))
                    self._remember(key, value)
                obj["spec"] = value
        if top.status is not UNSET:
            raw = top.status
            key = bytes(raw)
            value = self._new.get(key)
            obj["status"] = miss(key, raw) if value is None else value
        return obj

    def _spec(self, parts: dict[str, msgspec.Raw]) -> Obj:
        seen = self._new.get
        miss = self._miss
        decode = _ANY.decode
        spec: Obj = {}
        for name, raw in parts.items():
            if name in _SPEC_CONTAINERS:
                spec[name] = self._items(raw, _CONTAINER_SPLIT)
                seen = self._new.get  # (a miss may have started a new generation)
            elif name == "volumes":
                spec[name] = self._items(raw, _VOLUME_SPLIT)
                seen = self._new.get
            elif name in _SPEC_PER_OBJECT:
                spec[name] = decode(raw)
            elif name == "template":
                spec[name] = self._decode(raw, self._template_plan)
                seen = self._new.get
            else:
                key = bytes(raw)
                value = seen(key)
                spec[name] = miss(key, raw) if value is None else value
        return spec

    def _miss(self, key: bytes, raw: Any) -> Any:
        """Not in the new generation: promote it from the old one, or decode and remember it."""
        value = self._old.get(key)
        if value is None:
            self.misses += 1
            value = _ANY.decode(raw)
        self._remember(key, value)
        return value

    def _share(self, raw: Any) -> Any:
        """The decoded value of ``raw``: the table's when these bytes were seen, else decoded
        now and remembered."""
        key = bytes(raw)
        value = self._new.get(key)
        return self._miss(key, raw) if value is None else value

    def _items(self, raw: Any, split: frozenset[str]) -> Any:
        """A list of objects (containers, volumes): each element's members shared one by one,
        except ``split`` ones taken element-wise (a container's volumeMounts) and ``name`` (per
        pod for the token volume). Not looked up whole: the per-pod token volume and its mounts
        make these lists differ between any two pods, so hashing them whole is pure cost."""
        try:
            elements = _SPLIT_ITEMS.decode(raw)
        except msgspec.ValidationError:  # not a list of objects: take it as it is
            return self._share(raw)
        miss = self._miss
        decode = _ANY.decode
        value = []
        for members in elements:
            element: Obj = {}
            for name, sub in members.items():
                if name in split:
                    element[name] = self._each(sub)
                elif name == "name":
                    element[name] = decode(sub)
                else:
                    key = bytes(sub)
                    shared = self._new.get(key)
                    element[name] = miss(key, sub) if shared is None else shared
            value.append(element)
        return value

    def _each(self, raw: Any) -> Any:
        try:
            parts = _SPLIT_LIST.decode(raw)
        except msgspec.ValidationError:  # not a list: take it as it is
            return self._share(raw)
        share = self._share
        return [share(x) for x in parts]

    # -- the generic walk -----------------------------------------------------------------------
    def _decode(self, raw: Any, plan: _Plan) -> Any:
        if plan.share:
            key = bytes(raw)
            value = self._new.get(key)
            if value is not None:
                return value
            value = self._old.get(key)
            if value is None:
                self.misses += 1
                value = self._split(raw, plan)
            self._remember(key, value)
            return value
        return self._split(raw, plan)

    def _remember(self, key: bytes, value: Any) -> None:
        new = self._new
        new[key] = value
        if len(new) >= self.max_entries:
            self._old, self._new = new, {}

    def _split(self, raw: Any, plan: _Plan) -> Any:
        keys = plan.keys
        if keys is not None:
            try:
                parts = _SPLIT_DICT.decode(raw)
            except msgspec.ValidationError:  # not an object here: take it as it is
                return _ANY.decode(raw)
            other = plan.other
            out: dict[str, Any] = {}
            for name, sub in parts.items():
                p = keys.get(name, other)
                if p is None:
                    out[name] = _ANY.decode(sub)
                elif p is not _DROP:
                    out[name] = self._decode(sub, p)
            return out
        each = plan.each
        if each is not None:
            try:
                items = _SPLIT_LIST.decode(raw)
            except msgspec.ValidationError:
                return _ANY.decode(raw)
            decode = self._decode
            return [decode(sub, each) for sub in items]
        return _ANY.decode(raw)
