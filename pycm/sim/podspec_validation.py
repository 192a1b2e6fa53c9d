# Over 500 lines, one concept: kube's ValidatePodSpec (a pod's and every pod template's spec).
"""A pod spec against kube-apiserver's ``ValidatePodSpec``, as ``details.causes``, in kube's
order: volumes; each container (name, image, ports, env, volume mounts, pull policy, resources,
security context, hooks and probes), then the init containers (the same checks; hooks and probes
only for a sidecar, ``restartPolicy: Always``); then the pod's restart and DNS policies, node
selector, security context, affinity, DNS config, topology spread constraints, service account
and node names, active deadline, hostname and subdomain, tolerations, priority and runtime class
names, preemption policy and grace period. One concept, one table
of kube's rules, long because ValidatePodSpec is: the scheduling rules (affinity, tolerations,
spread) are the part that could stand alone. Messages are kube's own; a bad value kube prints
as a Go struct (``%#v``) is shown as compact JSON here.

Not checked: volume sources' own fields, a ConfigMap or Secret reference's name, hugepages,
resize policies, seccomp/AppArmor/SELinux options, Windows options, readiness gates,
image pull secrets, host ports' uniqueness across containers and hostNetwork's port rules,
sysctls, ``os``, scheduling gates, overhead and resource claims.
Environment variable names follow the strict rule (kube's ``IsEnvVarName``, the emulator
announces 1.20): kube 1.32+ relaxes it to any printable ASCII but ``=``.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pycm.sim.errors import Cause
from pycm.sim.gostrconv import go_strings
from pycm.sim.quantity import canonical_quantity, parse_quantity
from pycm.sim.selectors import label_value_errors, qualified_name_errors
from pycm.sim.validation import (
    dns_label_causes,
    dns_subdomain_causes,
    duplicate,
    forbidden,
    invalid_shown,
    invalid_value,
    label_selector_causes,
    labels_causes,
    not_found,
    not_supported,
    port_name_causes,
    required,
    requirement_causes,
)

__all__ = ["pod_spec_causes"]

_PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
_PORT_RANGE = "must be between 1 and 65535, inclusive"


# A volume's sources in the order kube's validateVolumeSource checks them, with the field its
# "more than 1" cause names (kube's own spelling: cephFS, downwarAPI).
_VOLUME_SOURCES = (
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
)


def _volume_source_causes(field: str, volume: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    given = 0
    for key, shown in _VOLUME_SOURCES:
        if volume.get(key) is None:
            continue
        if given:
            causes.append(forbidden(f"{field}.{shown}", "may not specify more than 1 volume type"))
        else:
            given += 1
    if not given:
        causes.append({**required(field), "message": "Required value: must specify a volume type"})
    return causes


def _entries(field: str, items: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each object in the list ``items`` with its path (``field[i]``); anything else (not a
    list, an entry that is not an object) is not this module's to report."""
    for i, item in enumerate(items if isinstance(items, list) else ()):
        if isinstance(item, Mapping):
            yield f"{field}[{i}]", item


def _volumes_causes(field: str, volumes: Any) -> tuple[list[Cause], set[str]]:
    """kube's validateVolumes: exactly one source each, names required, DNS-1123 labels,
    unique (a source's own fields are not checked)."""
    causes: list[Cause] = []
    names: set[str] = set()
    for item, volume in _entries(field, volumes):
        causes += _volume_source_causes(item, volume)
        where = f"{item}.name"
        name = volume.get("name")
        if not name:
            causes.append(required(where))
            continue
        causes += dns_label_causes(where, str(name))
        if name in names:
            causes.append(duplicate(where, name))
        names.add(str(name))
    return causes, names


def _container_ports_causes(field: str, ports: Any) -> list[Cause]:
    """kube's validateContainerPorts."""
    causes: list[Cause] = []
    names: set[str] = set()
    for where, port in _entries(field, ports):
        name = port.get("name")
        if name:
            bad = port_name_causes(f"{where}.name", str(name))
            if bad:
                causes += bad
            elif name in names:
                causes.append(duplicate(f"{where}.name", name))
            else:
                names.add(str(name))
        number = port.get("containerPort")
        if not number:
            causes.append(required(f"{where}.containerPort"))
        elif isinstance(number, int) and not 1 <= number <= 65535:
            causes.append(invalid_value(f"{where}.containerPort", number, _PORT_RANGE))
        host = port.get("hostPort")
        if isinstance(host, int) and host != 0 and not 1 <= host <= 65535:
            causes.append(invalid_value(f"{where}.hostPort", host, _PORT_RANGE))
        protocol = port.get("protocol")
        if not protocol:
            causes.append(required(f"{where}.protocol"))
        elif protocol not in _PORT_PROTOCOLS:
            causes.append(not_supported(f"{where}.protocol", protocol, _PORT_PROTOCOLS))
    return causes


_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_ENV_NAME_ERROR = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
    "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
)


def env_name_errors(name: str) -> list[str]:
    """apimachinery's IsEnvVarName: the regex, and no ``.``/``..`` (a name is also a path)."""
    errors = [] if _ENV_NAME.match(name) else [_ENV_NAME_ERROR]
    if name in (".", ".."):
        errors.append(f"must not be '{name}'")
    elif name.startswith(".."):
        errors.append("must not start with '..'")
    return errors


_ENV_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")


def _env_causes(field: str, env: Any, env_from: Any) -> list[Cause]:
    """kube's ValidateEnv and ValidateEnvFrom, as far as their shape goes: a name each, and
    a value or exactly one source (a key selector's key required)."""
    causes: list[Cause] = []
    for where, var in _entries(f"{field}.env", env):
        name = var.get("name")
        if not name:
            causes.append(required(f"{where}.name"))
        else:
            causes += [invalid_value(f"{where}.name", name, why) for why in env_name_errors(name)]
        source = var.get("valueFrom")
        if not isinstance(source, Mapping):
            continue
        given = [k for k in _ENV_SOURCES if source.get(k) is not None]
        for kind in ("configMapKeyRef", "secretKeyRef"):
            ref = source.get(kind)
            if isinstance(ref, Mapping) and not ref.get("key"):
                causes.append(required(f"{where}.valueFrom.{kind}.key"))
        if not given:
            why = (
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                "`secretKeyRef`"
            )
            causes.append(invalid_value(f"{where}.valueFrom", "", why))
        elif var.get("value"):
            why = "may not be specified when `value` is not empty"
            causes.append(invalid_value(f"{where}.valueFrom", "", why))
        elif len(given) > 1:
            why = "may not have more than one field specified at a time"
            causes.append(invalid_value(f"{where}.valueFrom", "", why))
    for item, source in _entries(f"{field}.envFrom", env_from):
        prefix = source.get("prefix")
        if prefix:
            where = f"{item}.prefix"
            causes += [invalid_value(where, prefix, why) for why in env_name_errors(prefix)]
        given = [k for k in ("configMapRef", "secretRef") if source.get(k) is not None]
        # kube names the list, not the item, in these two causes.
        if not given:
            why = "must specify one of: `configMapRef` or `secretRef`"
            causes.append(invalid_value(f"{field}.envFrom", "", why))
        elif len(given) > 1:
            why = "may not have more than one field specified at a time"
            causes.append(invalid_value(f"{field}.envFrom", "", why))
    return causes


def _volume_mounts_causes(field: str, mounts: Any, volumes: set[str]) -> list[Cause]:
    """kube's ValidateVolumeMounts: each names a volume of the pod, at a unique path."""
    causes: list[Cause] = []
    paths: set[str] = set()
    for where, mount in _entries(field, mounts):
        name = mount.get("name") or ""
        if not name:
            causes.append(required(f"{where}.name"))
        if name not in volumes:
            causes.append(not_found(f"{where}.name", name))
        path = mount.get("mountPath") or ""
        if not path:
            causes.append(required(f"{where}.mountPath"))
        if path in paths:
            causes.append(invalid_value(f"{where}.mountPath", path, "must be unique"))
        paths.add(str(path))
    return causes


_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_LIFECYCLE_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")
_PROBE_COUNTS = (
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
)


def _handler_causes(field: str, handler: Mapping[str, Any], kinds: Sequence[str]) -> list[Cause]:
    """kube's validateHandler: exactly one action, in kube's order; an exec has a command."""
    causes: list[Cause] = []
    given = 0
    for kind in kinds:
        if handler.get(kind) is None:
            continue
        if given:
            causes.append(forbidden(f"{field}.{kind}", "may not specify more than 1 handler type"))
            continue
        given += 1
        action = handler[kind]
        if kind == "exec" and isinstance(action, Mapping) and not action.get("command"):
            causes.append(required(f"{field}.exec.command"))
    if not given:
        causes.append({**required(field), "message": "Required value: must specify a handler type"})
    return causes


def _probes_causes(field: str, container: Mapping[str, Any]) -> list[Cause]:
    """A container's lifecycle hooks and probes: kube's validateLifecycle and validateProbe
    (an action each, counts not negative)."""
    causes: list[Cause] = []
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, Mapping):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), Mapping):
                where = f"{field}.lifecycle.{hook}"
                causes += _handler_causes(where, lifecycle[hook], _LIFECYCLE_HANDLERS)
    for name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(name)
        if not isinstance(probe, Mapping):
            continue
        causes += _handler_causes(f"{field}.{name}", probe, _PROBE_HANDLERS)
        for count in _PROBE_COUNTS:
            value = probe.get(count)
            if isinstance(value, int) and value < 0:
                why = "must be greater than or equal to 0"
                causes.append(invalid_value(f"{field}.{name}.{count}", value, why))
        # validateLivenessProbe/validateStartupProbe: only a readiness probe may ask for more
        # than one success (the field defaults to 1).
        success = probe.get("successThreshold")
        if name != "readinessProbe" and isinstance(success, int) and success != 1:
            causes.append(invalid_value(f"{field}.{name}.successThreshold", success, "must be 1"))
    return causes


def _struct(value: Any) -> str:
    """A struct kube prints with Go's ``%#v``, shown as compact JSON."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


# Resource names kube's IsStandardResourceName knows (quota's as well as containers'), and the
# few a container may ask for (IsStandardContainerResourceName); hugepages-<size> is both.
_STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "persistentvolumeclaims",
        "configmaps",
        "services.nodeports",
        "services.loadbalancers",
        "requests.storage",
    }
)
_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})


def _native(name: str) -> bool:
    """kube's IsNativeResource: unprefixed, or under ``kubernetes.io/``."""
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    """kube's IsExtendedResourceName (``example.com/gpu``): counted in whole units, and
    never overcommitted (a request must equal its limit)."""
    if _native(name) or name.startswith("requests."):
        return False
    return not qualified_name_errors(f"requests.{name}")


def _resource_name_causes(field: str, name: str) -> list[Cause]:
    """kube's validateContainerResourceName (validateResourceName's checks first)."""
    causes = [invalid_value(field, name, why) for why in qualified_name_errors(name)]
    if causes:
        return causes
    hugepages = name.startswith("hugepages-")
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not hugepages:
            why = "must be a standard resource type or fully qualified"
            return [invalid_value(field, name, why)]
        if name not in _CONTAINER_RESOURCES and not hugepages:
            return [invalid_value(field, name, "must be a standard resource for containers")]
    elif not _native(name) and not _extended(name):
        return [invalid_value(field, name, "doesn't follow extended resource name standard")]
    return []


def _quantity_causes(field: str, name: str, text: str) -> list[Cause]:
    """kube's ValidateResourceQuantityValue: not negative; whole for an extended resource."""
    try:
        value = parse_quantity(text)
    except ValueError as err:  # the shape check answers 400 first; kept for a direct call
        return [invalid_value(field, text, str(err))]
    if value < 0:
        return [invalid_value(field, text, "must be greater than or equal to 0")]
    if _extended(name) and value.denominator != 1:
        return [invalid_value(field, text, "must be an integer")]
    return []


def _resources_causes(field: str, resources: Any) -> list[Cause]:
    """kube's ValidateResourceRequirements: names a container may ask for, quantities not
    negative, each request at most its limit (equal to it where kube does not overcommit: an
    extended resource, which also needs a limit). Hugepages' own rules are not checked."""
    if not isinstance(resources, Mapping):
        return []
    limits, requests = resources.get("limits"), resources.get("requests")
    limits = limits if isinstance(limits, Mapping) else {}
    requests = requests if isinstance(requests, Mapping) else {}
    causes: list[Cause] = []
    for name, text in limits.items():
        where = f"{field}.limits[{name}]"
        causes += _resource_name_causes(where, str(name))
        causes += _quantity_causes(where, str(name), str(text))
    for name, text in requests.items():
        where = f"{field}.requests[{name}]"
        causes += _resource_name_causes(where, str(name))
        causes += _quantity_causes(where, str(name), str(text))
        overcommit = _native(str(name)) and not str(name).startswith("hugepages-")
        limit = limits.get(name)
        if limit is None:
            if not overcommit:
                why = "Limit must be set for non overcommitable resources"
                causes.append({**required(f"{field}.limits"), "message": f"Required value: {why}"})
            continue
        try:
            request_value, limit_value = parse_quantity(str(text)), parse_quantity(str(limit))
            shown = canonical_quantity(str(limit))
        except ValueError:
            continue
        if request_value != limit_value and not overcommit:
            why = f"must be equal to {name} limit of {shown}"
            causes.append(invalid_value(f"{field}.requests", str(text), why))
        elif request_value > limit_value:
            why = f"must be less than or equal to {name} limit of {shown}"
            causes.append(invalid_value(f"{field}.requests", str(text), why))
    return causes


_ID_RANGE = "must be between 0 and 2147483647, inclusive"  # IsValidUserID / IsValidGroupID


def _id_causes(field: str, value: Any) -> list[Cause]:
    if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= 2**31 - 1:
        return [invalid_value(field, value, _ID_RANGE)]
    return []


def _container_security_causes(field: str, context: Any) -> list[Cause]:
    """kube's ValidateSecurityContext: user and group IDs in range, a procMount kube knows,
    and no privilege escalation turned off beside ``privileged`` or an added CAP_SYS_ADMIN."""
    if not isinstance(context, Mapping):
        return []
    causes = _id_causes(f"{field}.runAsUser", context.get("runAsUser"))
    causes += _id_causes(f"{field}.runAsGroup", context.get("runAsGroup"))
    proc_mount = context.get("procMount")
    if proc_mount is not None and proc_mount not in ("Default", "Unmasked"):
        causes.append(not_supported(f"{field}.procMount", proc_mount, ("Default", "Unmasked")))
    if context.get("allowPrivilegeEscalation") is False:
        if context.get("privileged") is True:
            why = "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
            causes.append(invalid_shown(field, _struct(context), why))
        capabilities = context.get("capabilities")
        added = capabilities.get("add") if isinstance(capabilities, Mapping) else None
        for capability in added if isinstance(added, list) else []:
            if capability == "CAP_SYS_ADMIN":
                why = (
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                    "CAP_SYS_ADMIN"
                )
                causes.append(invalid_shown(field, _struct(context), why))
    return causes


def _pod_security_causes(field: str, context: Any, spec: Mapping[str, Any]) -> list[Cause]:
    """kube's validatePodSpecSecurityContext: IDs in range (fsGroup, runAsUser, runAsGroup,
    each supplemental group), a known fsGroupChangePolicy, no shared process namespace with
    the host's."""
    if not isinstance(context, Mapping):
        return []
    causes = _id_causes(f"{field}.fsGroup", context.get("fsGroup"))
    causes += _id_causes(f"{field}.runAsUser", context.get("runAsUser"))
    causes += _id_causes(f"{field}.runAsGroup", context.get("runAsGroup"))
    groups = context.get("supplementalGroups")
    for i, group in enumerate(groups if isinstance(groups, list) else []):
        causes += _id_causes(f"{field}.supplementalGroups[{i}]", group)
    if spec.get("shareProcessNamespace") is True and spec.get("hostPID") is True:
        why = "ShareProcessNamespace and HostPID cannot both be enabled"
        causes.append(invalid_value(f"{field}.shareProcessNamespace", True, why))
    policy = context.get("fsGroupChangePolicy")
    if policy is not None and policy not in ("OnRootMismatch", "Always"):
        supported = ("OnRootMismatch", "Always")
        causes.append(not_supported(f"{field}.fsGroupChangePolicy", policy, supported))
    return causes


_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_MESSAGE_POLICIES = "must be 'File' or 'FallbackToLogsOnError'"


def _container_causes(
    where: str, container: Mapping[str, Any], volumes: set[str], init: bool
) -> list[Cause]:
    """kube's validateContainerCommon, then the hooks and probes (validateContainers), or for an
    init container validateInitContainers' rules: hooks and probes only for a sidecar."""
    causes: list[Cause] = []
    if not container.get("image"):
        causes.append(required(f"{where}.image"))
    message_policy = container.get("terminationMessagePolicy")
    if message_policy is not None and message_policy not in ("File", "FallbackToLogsOnError"):
        causes.append(
            invalid_value(f"{where}.terminationMessagePolicy", message_policy, _MESSAGE_POLICIES)
        )
    causes += _container_ports_causes(f"{where}.ports", container.get("ports"))
    causes += _env_causes(where, container.get("env"), container.get("envFrom"))
    causes += _volume_mounts_causes(f"{where}.volumeMounts", container.get("volumeMounts"), volumes)
    pull = container.get("imagePullPolicy")
    if pull is not None and pull not in _PULL_POLICIES:
        causes.append(not_supported(f"{where}.imagePullPolicy", pull, _PULL_POLICIES))
    causes += _resources_causes(f"{where}.resources", container.get("resources"))
    causes += _container_security_causes(
        f"{where}.securityContext", container.get("securityContext")
    )
    restart = container.get("restartPolicy")
    if not init:
        causes += _probes_causes(where, container)
        if restart is not None:
            causes.append(
                forbidden(f"{where}.restartPolicy", "may not be set for non-init containers")
            )
    elif restart == "Always":  # a sidecar: hooks and probes as a regular container's
        causes += _probes_causes(where, container)
    elif restart is not None:
        causes.append(not_supported(f"{where}.restartPolicy", restart, ("Always",)))
    else:
        why = "may not be set for init containers without restartPolicy=Always"
        for name in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
            if container.get(name) is not None:
                causes.append(forbidden(f"{where}.{name}", why))
    return causes


def _containers_causes(field: str, spec: Mapping[str, Any], volumes: set[str]) -> list[Cause]:
    """The containers, then the init containers (kube's order): names DNS labels, unique
    across both lists (a clash is reported on the later one), then each one's checks."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for group in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(group) or []):
            where = f"{field}.{group}[{i}]"
            if not isinstance(container, Mapping):
                causes.append(invalid_value(where, str(container), "must be an object"))
                continue
            name = container.get("name")
            if not name:
                causes.append(required(f"{where}.name"))
            else:
                causes += dns_label_causes(f"{where}.name", str(name))
                if name in seen:
                    causes.append(duplicate(f"{where}.name", name))
                seen.add(str(name))
            causes += _container_causes(where, container, volumes, group == "initContainers")
    return causes


_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _tolerations_causes(field: str, tolerations: Any) -> list[Cause]:
    """kube's ValidateTolerations (its quirk kept: a bad value is reported on ``operator``)."""
    causes: list[Cause] = []
    for where, toleration in _entries(field, tolerations):
        key, operator = str(toleration.get("key") or ""), toleration.get("operator") or ""
        value, effect = str(toleration.get("value") or ""), toleration.get("effect") or ""
        if key:
            causes += [
                invalid_value(f"{where}.key", key, why) for why in qualified_name_errors(key)
            ]
        elif operator != "Exists":
            why = (
                "operator must be Exists when `key` is empty, which means "
                '"match all values and all keys"'
            )
            causes.append(invalid_value(f"{where}.operator", operator, why))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            why = "effect must be 'NoExecute' when `tolerationSeconds` is set"
            causes.append(invalid_value(f"{where}.effect", effect, why))
        if operator in ("", "Equal"):
            errors = label_value_errors(value)
            if errors:
                causes.append(invalid_value(f"{where}.operator", value, ";".join(errors)))
        elif operator == "Exists":
            if value:
                why = "value must be empty when `operator` is 'Exists'"
                causes.append(invalid_shown(f"{where}.operator", _struct(toleration), why))
        else:
            causes.append(not_supported(f"{where}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in _EFFECTS:
            causes.append(not_supported(f"{where}.effect", effect, _EFFECTS))
    return causes


def _node_selector_term_causes(field: str, term: Any) -> list[Cause]:
    """kube's ValidateNodeSelectorTerm: each requirement's operator, values and key; a field
    requirement only on ``metadata.name``, with one value."""
    if not isinstance(term, Mapping):
        return []
    causes: list[Cause] = []
    for j, req in enumerate(term.get("matchExpressions") or []):
        if not isinstance(req, Mapping):
            continue
        where = f"{field}.matchExpressions[{j}]"
        causes += requirement_causes(where, req, req.get("values") or [], node=True)
    for j, req in enumerate(term.get("matchFields") or []):
        if not isinstance(req, Mapping):
            continue
        where = f"{field}.matchFields[{j}]"
        operator, values = req.get("operator"), req.get("values") or []
        if operator in ("In", "NotIn"):
            if len(values) != 1:
                why = (
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector"
                )
                causes.append({**required(f"{where}.values"), "message": f"Required value: {why}"})
        else:
            why = "not a valid selector operator"
            causes.append(invalid_value(f"{where}.operator", str(operator or ""), why))
        if req.get("key") != "metadata.name":
            why = "not a valid field selector key"
            causes.append(invalid_value(f"{where}.key", str(req.get("key") or ""), why))
    return causes


_WEIGHT = "must be in the range 1-100"


def _weight_causes(field: str, weight: Any) -> list[Cause]:
    if isinstance(weight, int) and 1 <= weight <= 100:
        return []
    return [invalid_value(field, weight if isinstance(weight, int) else 0, _WEIGHT)]


def _pod_affinity_term_causes(field: str, term: Any) -> list[Cause]:
    """kube's validatePodAffinityTerm: its selectors, namespaces DNS labels, a topologyKey
    (required, and a label name)."""
    if not isinstance(term, Mapping):
        return []
    causes = label_selector_causes(f"{field}.labelSelector", term.get("labelSelector"))
    causes += label_selector_causes(f"{field}.namespaceSelector", term.get("namespaceSelector"))
    for name in term.get("namespaces") or []:
        causes += dns_label_causes(f"{field}.namespace", str(name))  # (kube's singular)
    key = str(term.get("topologyKey") or "")
    if not key:
        causes.append(
            {**required(f"{field}.topologyKey"), "message": "Required value: can not be empty"}
        )
    causes += [
        invalid_value(f"{field}.topologyKey", key, why) for why in qualified_name_errors(key)
    ]
    return causes


def _affinity_causes(field: str, affinity: Any) -> list[Cause]:
    """kube's validateAffinity: node affinity's terms (at least one when required; weights
    1-100) and pod (anti-)affinity's terms."""
    if not isinstance(affinity, Mapping):
        return []
    causes: list[Cause] = []
    required_key, preferred_key = (
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    node = affinity.get("nodeAffinity")
    if isinstance(node, Mapping):
        selector = node.get(required_key)
        if isinstance(selector, Mapping):
            where = f"{field}.nodeAffinity.{required_key}.nodeSelectorTerms"
            terms = selector.get("nodeSelectorTerms") or []
            if not terms:
                why = "Required value: must have at least one node selector term"
                causes.append({**required(where), "message": why})
            for i, term in enumerate(terms):
                causes += _node_selector_term_causes(f"{where}[{i}]", term)
        for i, term in enumerate(node.get(preferred_key) or []):
            if isinstance(term, Mapping):
                where = f"{field}.nodeAffinity.{preferred_key}[{i}]"
                causes += _weight_causes(f"{where}.weight", term.get("weight"))
                causes += _node_selector_term_causes(f"{where}.preference", term.get("preference"))
    for kind in ("podAffinity", "podAntiAffinity"):
        pods = affinity.get(kind)
        if not isinstance(pods, Mapping):
            continue
        for i, term in enumerate(pods.get(required_key) or []):
            causes += _pod_affinity_term_causes(f"{field}.{kind}.{required_key}[{i}]", term)
        for i, term in enumerate(pods.get(preferred_key) or []):
            if isinstance(term, Mapping):
                where = f"{field}.{kind}.{preferred_key}[{i}]"
                causes += _weight_causes(f"{where}.weight", term.get("weight"))
                causes += _pod_affinity_term_causes(
                    f"{where}.podAffinityTerm", term.get("podAffinityTerm")
                )
    return causes


_SCHEDULE_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")


def _spread_causes(field: str, constraints: Any) -> list[Cause]:
    """kube's validateTopologySpreadConstraints: maxSkew > 0, a topologyKey, a known
    whenUnsatisfiable, no {topologyKey, whenUnsatisfiable} twice (reported on the first),
    minDomains > 0 and only with DoNotSchedule, the label selector."""
    items = (
        [c for c in constraints if isinstance(c, Mapping)] if isinstance(constraints, list) else []
    )
    causes: list[Cause] = []
    for i, constraint in enumerate(items):
        where = f"{field}[{i}]"
        skew = constraint.get("maxSkew")
        if not isinstance(skew, int) or skew <= 0:
            causes.append(invalid_value(f"{where}.maxSkew", skew or 0, "must be greater than zero"))
        key = constraint.get("topologyKey") or ""
        if not key:
            causes.append(
                {**required(f"{where}.topologyKey"), "message": "Required value: can not be empty"}
            )
        action = constraint.get("whenUnsatisfiable") or ""
        if action not in _SCHEDULE_ACTIONS:
            causes.append(not_supported(f"{where}.whenUnsatisfiable", action, _SCHEDULE_ACTIONS))
        if any(
            (other.get("topologyKey") or "", other.get("whenUnsatisfiable") or "") == (key, action)
            for other in items[i + 1 :]
        ):
            causes.append(
                duplicate(f"{where}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {action}}}")
            )
        domains = constraint.get("minDomains")
        if domains is not None:
            if not isinstance(domains, int) or domains <= 0:
                causes.append(
                    invalid_value(f"{where}.minDomains", domains, "must be greater than zero")
                )
            if action != "DoNotSchedule":
                why = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                causes.append(invalid_value(f"{where}.minDomains", domains, why))
        causes += label_selector_causes(f"{where}.labelSelector", constraint.get("labelSelector"))
    return causes


_DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_MAX_NAMESERVERS = 3
_MAX_SEARCHES = 32
_MAX_SEARCH_CHARS = 2048


def _ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _dns_config_causes(field: str, config: Any, policy: Any) -> list[Cause]:
    """kube's validatePodDNSConfig: with dnsPolicy None a config with a nameserver; at most
    three nameservers, each an IP; at most 32 search domains (2048 characters), each a DNS
    subdomain (a trailing dot allowed); each option named."""
    if policy == "None":
        if not isinstance(config, Mapping):
            why = "must provide `dnsConfig` when `dnsPolicy` is None"
            return [{**required(field), "message": f"Required value: {why}"}]
        if not config.get("nameservers"):
            why = "must provide at least one DNS nameserver when `dnsPolicy` is None"
            return [{**required(f"{field}.nameservers"), "message": f"Required value: {why}"}]
    if not isinstance(config, Mapping):
        return []
    causes: list[Cause] = []
    servers = config.get("nameservers") or []
    if len(servers) > _MAX_NAMESERVERS:
        why = f"must not have more than {_MAX_NAMESERVERS} nameservers"
        causes.append(invalid_shown(f"{field}.nameservers", go_strings(servers), why))
    for i, server in enumerate(servers):
        if not _ip(str(server)):
            why = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            causes.append(invalid_value(f"{field}.nameservers[{i}]", str(server), why))
    searches = [str(s) for s in config.get("searches") or []]
    if len(searches) > _MAX_SEARCHES:
        why = f"must not have more than {_MAX_SEARCHES} search paths"
        causes.append(invalid_shown(f"{field}.searches", go_strings(searches), why))
    if len(" ".join(searches)) > _MAX_SEARCH_CHARS:
        why = (
            f"must not have more than {_MAX_SEARCH_CHARS} characters (including spaces) in the "
            "search list"
        )
        causes.append(invalid_shown(f"{field}.searches", go_strings(searches), why))
    for i, search in enumerate(searches):
        causes += dns_subdomain_causes(f"{field}.searches[{i}]", search.removesuffix("."))
    for i, option in enumerate(config.get("options") or []):
        if not (isinstance(option, Mapping) and option.get("name")):
            why = "Required value: Option.Name must not be empty"
            causes.append({**required(f"{field}.options[{i}]"), "message": why})
    return causes


_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_DEADLINE_RANGE = "must be between 1 and 2147483647, inclusive"


def _pod_fields_causes(field: str, spec: Mapping[str, Any]) -> list[Cause]:
    """ValidatePodSpec's pod-level checks, in its order."""
    causes: list[Cause] = []
    restart = spec.get("restartPolicy")
    if restart is not None and restart not in _RESTART_POLICIES:
        causes.append(not_supported(f"{field}.restartPolicy", restart, _RESTART_POLICIES))
    dns_policy = spec.get("dnsPolicy")
    if dns_policy is not None and dns_policy not in _DNS_POLICIES:
        causes.append(not_supported(f"{field}.dnsPolicy", dns_policy, _DNS_POLICIES))
    causes += labels_causes(f"{field}.nodeSelector", spec.get("nodeSelector"))
    causes += _pod_security_causes(f"{field}.securityContext", spec.get("securityContext"), spec)
    causes += _affinity_causes(f"{field}.affinity", spec.get("affinity"))
    causes += _dns_config_causes(f"{field}.dnsConfig", spec.get("dnsConfig"), dns_policy)
    causes += _spread_causes(
        f"{field}.topologySpreadConstraints", spec.get("topologySpreadConstraints")
    )
    for name in ("serviceAccountName", "nodeName"):
        if spec.get(name):
            causes += dns_subdomain_causes(f"{field}.{name}", str(spec[name]))
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= 2**31 - 1:
        causes.append(invalid_value(f"{field}.activeDeadlineSeconds", deadline, _DEADLINE_RANGE))
    for name in ("hostname", "subdomain"):
        if spec.get(name):
            causes += dns_label_causes(f"{field}.{name}", str(spec[name]))
    causes += _tolerations_causes(f"{field}.tolerations", spec.get("tolerations"))
    for name in ("priorityClassName", "runtimeClassName"):
        if spec.get(name):
            causes += dns_subdomain_causes(f"{field}.{name}", str(spec[name]))
    preemption = spec.get("preemptionPolicy")
    if preemption is not None and preemption not in _PREEMPTION_POLICIES:
        causes.append(not_supported(f"{field}.preemptionPolicy", preemption, _PREEMPTION_POLICIES))
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        why = "must be greater than or equal to 0"
        causes.append(invalid_value(f"{field}.terminationGracePeriodSeconds", grace, why))
    return causes


def pod_spec_causes(field: str, spec: Any, claim_volumes: Sequence[str] = ()) -> list[Cause]:
    """A pod spec's causes (``field`` is ``spec`` for a Pod, ``….template.spec`` for a
    template), in kube's order. ``claim_volumes``: names a StatefulSet's claim templates give
    its pods."""
    if not isinstance(spec, Mapping):
        return [required(field)]
    causes, volumes = _volumes_causes(f"{field}.volumes", spec.get("volumes"))
    volumes |= set(claim_volumes)
    containers = spec.get("containers")
    if not containers or not isinstance(containers, list):
        return [*causes, required(f"{field}.containers")]
    causes += _containers_causes(field, spec, volumes)
    if spec.get("ephemeralContainers"):
        # Added only through a pod's ephemeralcontainers subresource, which is not served.
        if field.endswith("template.spec"):
            why = "ephemeral containers not allowed in pod template"
        else:
            why = "cannot be set on create"
        causes.append(forbidden(f"{field}.ephemeralContainers", why))
    return causes + _pod_fields_causes(field, spec)
