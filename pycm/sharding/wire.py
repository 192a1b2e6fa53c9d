"""A ring's Leases on the wire: their names, label and annotations, the bodies a member writes,
and what a member reads back from them.

Each member holds ``<ring>-<identity>`` (``coordination.k8s.io/v1`` Lease, labelled
``sharding.pycm.io/ring=<ring>``): ``holderIdentity`` and the renew fields as a leader lease (so
``kubectl get leases`` reads it), its published view and its claim's layout digest in
annotations. The ring's layout lives in ``<ring>-layout``, labelled the same (one read gets it
with the members') but with no holder, so it never counts as a member.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from typing import Any, Final

from pycm.sharding.claims import Claim, PeerRecord
from pycm.sharding.layout import Layout, LayoutError

__all__ = [
    "KNOTS_ANNOTATION",
    "LAYOUT_ANNOTATION",
    "NAMESPACES_ANNOTATION",
    "RING_LABEL",
    "VIEW_ANNOTATION",
    "layout_lease",
    "layout_lease_name",
    "layout_of",
    "lease_name",
    "member_lease",
    "peer_record",
]

RING_LABEL: Final = "sharding.pycm.io/ring"
VIEW_ANNOTATION: Final = "sharding.pycm.io/view"
LAYOUT_ANNOTATION: Final = "sharding.pycm.io/layout"
"""On a member's Lease: the digest of its claim's layout; on the layout Lease: its own digest."""
KNOTS_ANNOTATION: Final = "sharding.pycm.io/layout-knots"
NAMESPACES_ANNOTATION: Final = "sharding.pycm.io/layout-namespaces"
_LAYOUT_SUFFIX: Final = "layout"
_NAME_OK = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def lease_name(ring: str, identity: str) -> str:
    """``<ring>-<identity>`` as a DNS-1123 label: an identity with other characters (KCM's are
    ``<host>_<uuid>``) is lower-cased, its other characters become ``-`` and a short hash of it
    is added, so that two identities never share a Lease (nor the ring's layout Lease)."""
    name = f"{ring}-{identity}"
    if _NAME_OK.match(name) and len(name) <= 63 and identity != _LAYOUT_SUFFIX:
        return name
    digest = hashlib.sha256(identity.encode()).hexdigest()[:8]
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[: 63 - 9].strip("-")
    return f"{cleaned}-{digest}"


def layout_lease_name(ring: str) -> str:
    """The ring's shared layout Lease (no member's Lease has this name: see :func:`lease_name`)."""
    return f"{ring}-{_LAYOUT_SUFFIX}"


def _micro_time(ns: int) -> str:
    moment = dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lease(
    name: str, ring: str, annotations: dict[str, str], spec: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "labels": {RING_LABEL: ring}, "annotations": annotations},
        "spec": spec,
    }


def member_lease(
    name: str, ring: str, identity: str, lease_duration: float, claim: Claim, now_ns: int
) -> dict[str, Any]:
    """A member's Lease publishing ``claim`` (an empty view: released, no holder)."""
    view = claim.view
    annotations = {VIEW_ANNOTATION: ",".join(sorted(view)), LAYOUT_ANNOTATION: claim.layout}
    spec = {
        "holderIdentity": identity if view else "",
        "leaseDurationSeconds": round(lease_duration),
        "renewTime": _micro_time(now_ns),
    }
    return _lease(name, ring, annotations, spec)


def layout_lease(name: str, ring: str, layout: Layout, namespaces: int) -> dict[str, Any]:
    """The layout Lease: labelled with the ring, no holder, the knots and their digest (and how
    many namespaces they were built from) in annotations."""
    annotations = {
        LAYOUT_ANNOTATION: layout.digest,
        KNOTS_ANNOTATION: layout.encode(),
        NAMESPACES_ANNOTATION: str(namespaces),
    }
    return _lease(name, ring, annotations, {})


def peer_record(lease: dict[str, Any]) -> PeerRecord | None:
    """A member's Lease as read; None for a Lease without a holder (the layout Lease, or a
    member's that was released)."""
    meta = lease.get("metadata") or {}
    holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
    if not holder:
        return None
    annotations = meta.get("annotations") or {}
    view = str(annotations.get(VIEW_ANNOTATION) or "")
    members = frozenset(m for m in view.split(",") if m)
    layout = str(annotations.get(LAYOUT_ANNOTATION) or "")
    return PeerRecord(holder, members, str(meta.get("resourceVersion") or ""), layout)


def layout_of(lease: dict[str, Any]) -> Layout:
    """The layout a layout Lease holds, or :class:`LayoutError` (its digest must match)."""
    annotations = (lease.get("metadata") or {}).get("annotations") or {}
    layout = Layout.decode(str(annotations.get(KNOTS_ANNOTATION) or ""))
    said = str(annotations.get(LAYOUT_ANNOTATION) or "")
    if said != layout.digest:
        raise LayoutError(f"layout digest {said!r} does not match its knots ({layout.digest!r})")
    return layout
