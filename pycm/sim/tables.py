"""Server-side printing: ``meta.k8s.io/v1 Table`` with kube-apiserver's columns per kind.

A :class:`Printer` is a kind's column definitions and the function that fills one row; each
kind's strategy carries its printer (:mod:`pycm.sim.registry`), so a custom resource brings its
own (its ``additionalPrinterColumns``). :data:`PRINTERS` holds the core kinds' printers, written
from kube's ``pkg/printers/internalversion``; :data:`DEFAULT_PRINTER` (Name, Created At) is what
kube prints for a kind without one.

Column names are kube's own (kubectl upper-cases them: "Up-to-date" prints as UP-TO-DATE);
priority-1 columns are the ones ``-o wide`` adds. Ages are printed as kube's HumanDuration.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pycm.sim.objects import Obj, parse_rfc3339

__all__ = [
    "DEFAULT_PRINTER",
    "PRINTERS",
    "Printer",
    "age",
    "col",
    "containers_of",
    "human_duration",
    "name_of",
    "partial_metadata",
    "selector_of",
    "spec_of",
    "status_of",
    "table",
]

Column = dict[str, Any]
CellsFn = Callable[[Obj, float], list[Any]]


def col(name: str, type_: str = "string", priority: int = 0, fmt: str = "") -> Column:
    return {"name": name, "type": type_, "format": fmt, "description": "", "priority": priority}


def human_duration(seconds: float) -> str:
    """kube's ``duration.HumanDuration``."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m{rem}s" if rem else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h{rem}m" if rem else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d{rem}h" if rem else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        rem = days % 365
        return f"{days // 365}y{rem}d" if rem else f"{days // 365}y"
    return f"{hours // (24 * 365)}y"


def age(obj: Obj, now: float) -> str:
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    return human_duration(now - parse_rfc3339(str(created)))


def name_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def spec_of(obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def status_of(obj: Obj) -> dict[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def containers_of(obj: Obj, template: Any = None) -> tuple[str, str]:
    """The names and images of the containers of ``obj``'s pod template (or ``template``)."""
    if template is None:
        template = spec_of(obj).get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    names = ",".join(str(c.get("name", "")) for c in containers)
    images = ",".join(str(c.get("image", "")) for c in containers)
    return names, images


def selector_of(obj: Obj, selector: Any = None) -> str:
    """``obj``'s label selector (or ``selector``) as kubectl prints it."""
    if selector is None:
        selector = spec_of(obj).get("selector") or {}
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        values = ",".join(expr.get("values") or [])
        parts.append(f"{expr.get('key')} {str(expr.get('operator', '')).lower()} ({values})")
    return ",".join(parts) or "<none>"


def _pod_status(pod: Obj) -> str:
    status = status_of(pod)
    reason = str(status.get("reason") or status.get("phase") or "Unknown")
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        waiting = state.get("waiting") or {}
        terminated = state.get("terminated") or {}
        if waiting.get("reason"):
            reason = str(waiting["reason"])
        elif terminated.get("reason"):
            reason = str(terminated["reason"])
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return reason


def _pod_cells(pod: Obj, now: float) -> list[Any]:
    spec, status = spec_of(pod), status_of(pod)
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for cs in statuses if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    total = len(spec.get("containers") or [])
    gates = spec.get("readinessGates") or []
    return [
        name_of(pod),
        f"{ready}/{total}",
        _pod_status(pod),
        restarts,
        age(pod, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"{len(gates)}" if gates else "<none>",
    ]


def _deployment_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = spec_of(obj), status_of(obj)
    names, images = containers_of(obj)
    return [
        name_of(obj),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        age(obj, now),
        names,
        images,
        selector_of(obj),
    ]


def _replicaset_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = spec_of(obj), status_of(obj)
    names, images = containers_of(obj)
    return [
        name_of(obj),
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        age(obj, now),
        names,
        images,
        selector_of(obj),
    ]


def _node_cells(node: Obj, now: float) -> list[Any]:
    status = status_of(node)
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    ready = conditions.get("Ready")
    state = "Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown"
    if spec_of(node).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = (node.get("metadata") or {}).get("labels") or {}
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix) :] for k in labels if k.startswith(prefix) and k != prefix)
    if labels.get("kubernetes.io/role"):
        roles.append(str(labels["kubernetes.io/role"]))
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        name_of(node),
        state,
        ",".join(roles) or "<none>",
        age(node, now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP") or "<none>",
        addresses.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _event_cells(event: Obj, now: float) -> list[Any]:
    involved = event.get("involvedObject") or {}
    last = (
        event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
    )
    first = event.get("firstTimestamp") or last
    source = event.get("source") or {}
    return [
        human_duration(now - parse_rfc3339(str(last))) if last else "<unknown>",
        event.get("type", ""),
        event.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        source.get("component", "") or event.get("reportingComponent", ""),
        event.get("message", ""),
        human_duration(now - parse_rfc3339(str(first))) if first else "<unknown>",
        int(event.get("count") or 1),
        name_of(event),
    ]


@dataclass(frozen=True, slots=True)
class Printer:
    """A kind's table: its columns, and the cells of one object's row (at ``now``, unix s)."""

    columns: list[Column]
    cells: CellsFn


PRINTERS: dict[str, Printer] = {
    "Pod": Printer(
        [
            col("Name", fmt="name"),
            col("Ready"),
            col("Status"),
            col("Restarts", "integer"),
            col("Age"),
            col("IP", priority=1),
            col("Node", priority=1),
            col("Nominated Node", priority=1),
            col("Readiness Gates", priority=1),
        ],
        _pod_cells,
    ),
    "Deployment": Printer(
        [
            col("Name", fmt="name"),
            col("Ready"),
            col("Up-to-date", "integer"),
            col("Available", "integer"),
            col("Age"),
            col("Containers", priority=1),
            col("Images", priority=1),
            col("Selector", priority=1),
        ],
        _deployment_cells,
    ),
    "ReplicaSet": Printer(
        [
            col("Name", fmt="name"),
            col("Desired", "integer"),
            col("Current", "integer"),
            col("Ready", "integer"),
            col("Age"),
            col("Containers", priority=1),
            col("Images", priority=1),
            col("Selector", priority=1),
        ],
        _replicaset_cells,
    ),
    "Lease": Printer(
        [col("Name", fmt="name"), col("Holder"), col("Age")],
        lambda o, now: [name_of(o), spec_of(o).get("holderIdentity") or "", age(o, now)],
    ),
    "Node": Printer(
        [
            col("Name", fmt="name"),
            col("Status"),
            col("Roles"),
            col("Age"),
            col("Version"),
            col("Internal-IP", priority=1),
            col("External-IP", priority=1),
            col("OS-Image", priority=1),
            col("Kernel-Version", priority=1),
            col("Container-Runtime", priority=1),
        ],
        _node_cells,
    ),
    "Namespace": Printer(
        [col("Name", fmt="name"), col("Status"), col("Age")],
        lambda o, now: [name_of(o), status_of(o).get("phase", ""), age(o, now)],
    ),
    "ConfigMap": Printer(
        [col("Name", fmt="name"), col("Data", "integer"), col("Age")],
        lambda o, now: [
            name_of(o),
            len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            age(o, now),
        ],
    ),
    "ServiceAccount": Printer(
        [col("Name", fmt="name"), col("Secrets", "integer"), col("Age")],
        lambda o, now: [name_of(o), len(o.get("secrets") or []), age(o, now)],
    ),
    "Event": Printer(
        [
            col("Last Seen"),
            col("Type"),
            col("Reason"),
            col("Object"),
            col("Subobject", priority=1),
            col("Source", priority=1),
            col("Message"),
            col("First Seen", priority=1),
            col("Count", "integer", priority=1),
            col("Name", priority=1),
        ],
        _event_cells,
    ),
}

DEFAULT_PRINTER = Printer(
    [col("Name", fmt="name"), col("Created At", "date")],
    lambda o, now: [name_of(o), (o.get("metadata") or {}).get("creationTimestamp", "")],
)


def partial_metadata(obj: Obj, api_version: str = "meta.k8s.io/v1") -> Obj:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": obj.get("metadata") or {},
    }


def table(
    printer: Printer,
    objects: Sequence[Obj],
    now: float,
    include_object: str = "Metadata",
    list_meta: Obj | None = None,
    api_version: str = "meta.k8s.io/v1",
) -> Obj:
    rows = []
    for obj in objects:
        row: Obj = {"cells": printer.cells(obj, now)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object == "Metadata":
            row["object"] = partial_metadata(obj, api_version)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": list_meta or {},
        "columnDefinitions": printer.columns,
        "rows": rows,
    }
