"""A running pod's status as the kubelet reports it: phase, IPs, conditions and container
statuses, for its fate (ready, never ready, crash-looping)."""

from __future__ import annotations

from collections.abc import Iterator

from pycm.sim.kubelet.options import CRASHLOOP
from pycm.sim.objects import Obj

__all__ = ["fill_running", "restart_count", "set_condition"]


def fill_running(
    pod: Obj,
    *,
    uid: str,
    fate: str,
    ready: bool,
    restarts: int,
    stamp: str,
    pod_ips: Iterator[int],
) -> None:
    """Set ``pod``'s status to Running, ready or not, with ``restarts`` restarts, at ``stamp``
    (a new pod IP takes the next of ``pod_ips``)."""
    spec = pod.get("spec") or {}
    status = pod.setdefault("status", {})
    node_index = _node_index(str(spec.get("nodeName", "")))
    status["phase"] = "Running"
    status.setdefault("hostIP", f"10.0.{node_index // 250}.{node_index % 250 + 2}")
    status.setdefault("hostIPs", [{"ip": status["hostIP"]}])
    if "podIP" not in status:
        n = next(pod_ips)
        status["podIP"] = f"10.244.{node_index}.{n % 250 + 2}"
        status["podIPs"] = [{"ip": status["podIP"]}]
    status.setdefault("startTime", stamp)
    ready_text = "True" if ready else "False"
    not_ready = {} if ready else {"reason": "ContainersNotReady"}
    set_condition(status, "PodScheduled", "True", stamp)
    set_condition(status, "Initialized", "True", stamp)
    names = [str(c.get("name")) for c in spec.get("containers") or []]
    if not_ready:
        not_ready["message"] = f"containers with unready status: [{' '.join(names)}]"
    set_condition(status, "ContainersReady", ready_text, stamp, **not_ready)
    set_condition(status, "Ready", ready_text, stamp, **not_ready)
    old_statuses = {c.get("name"): c for c in status.get("containerStatuses") or []}
    statuses = []
    for container in spec.get("containers") or []:
        name = str(container.get("name"))
        old = old_statuses.get(name) or {}
        state: Obj
        if fate == CRASHLOOP:
            state = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off restarting failed container {name}",
                }
            }
        else:
            started_at = (old.get("state") or {}).get("running", {}).get("startedAt", stamp)
            state = {"running": {"startedAt": started_at}}
        entry: Obj = {
            "name": name,
            "image": container.get("image", ""),
            "imageID": f"sim://{container.get('image', '')}",
            "containerID": f"sim://{uid[:8]}-{name}",
            "ready": ready,
            "started": fate != CRASHLOOP,
            "restartCount": restarts,
            "state": state,
        }
        if fate == CRASHLOOP and restarts > 0:
            entry["lastState"] = {
                "terminated": {"exitCode": 1, "reason": "Error", "finishedAt": stamp}
            }
        statuses.append(entry)
    status["containerStatuses"] = statuses


def restart_count(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return max((int(c.get("restartCount") or 0) for c in statuses), default=0)


def _node_index(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def set_condition(
    status: Obj, type_: str, value: str, stamp: str, reason: str = "", message: str = ""
) -> None:
    """Set condition ``type_``; its lastTransitionTime moves only when its status changes."""
    conditions = status.setdefault("conditions", [])
    for cond in conditions:
        if cond.get("type") == type_:
            if cond.get("status") != value:
                cond["status"] = value
                cond["lastTransitionTime"] = stamp
            _set_reason(cond, reason, message)
            return
    cond = {"type": type_, "status": value, "lastProbeTime": None, "lastTransitionTime": stamp}
    _set_reason(cond, reason, message)
    conditions.append(cond)


def _set_reason(cond: Obj, reason: str, message: str) -> None:
    for key, value in (("reason", reason), ("message", message)):
        if value:
            cond[key] = value
        else:
            cond.pop(key, None)
