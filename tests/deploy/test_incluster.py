"""`pycm run` in-cluster, with exactly the manifests' RBAC, against the emulator over TLS.

The manager process runs with no --kubeconfig in a private mount namespace (`unshare -m`, as
root): a temporary directory is bind-mounted over /run (/var/run), holding
secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}; the machine's own files are never
touched. KUBERNETES_SERVICE_HOST/PORT name the emulator. The manager authenticates as the
service account pycm-system/pycm, and the emulator enforces a policy built from the
ClusterRole and Role in deploy/kubernetes/base (403 on anything else). Its args are the
Deployment's (with a free port, short election timings and no OTLP export).

The test sees it lead (a Lease in the pod's namespace, pycm-system, not kube-system), reconcile a
rollout (create, two image updates with revision history 1, scale, a released pod, an orphan
ReplicaSet adopted), pick up a rotated token after the old one is revoked, and serve /metrics to
a scraper whose token it reviews. Every API call the manager made is then replayed against the
RBAC rules: nothing used that is not granted, nothing granted that is not used.

A second run applies the service-account-credentials overlay (its flag and its kube-system
Role): the controllers then write as KCM's controller service accounts, and pycm's own calls
use the overlay's Role entirely and need nothing beyond base and overlay. The sharded overlay's
run (its flag and Role) joins the ring with its membership Lease, reconciles and leaves, within
base and overlay.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

from pycm.sim.auth import ADMIN_GROUP, UserInfo
from pycm.sim.requestinfo import request_info
from pycm.sim.server import Emulator, run_emulator
from tests.deploy.conftest import DEPLOY
from tests.deploy.rbac import (
    COORDINATED_ROLE,
    MANAGER_ROLES,
    SA_CREDENTIALS_ROLE,
    SHARDING_ROLE,
    Call,
    check_rbac,
    emulator_policy,
    grants,
)
from tests.support.manager import ManagerProcess, free_port, poll, stop_manager

NAMESPACE = "pycm-system"  # the pod's namespace (the manifests')
SA_USER = f"system:serviceaccount:{NAMESPACE}:pycm"
SA_GROUPS = ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}")
SCRAPER = "system:serviceaccount:monitoring:prometheus"
IDENTITY = "pycm-incluster-0"
NS = "default"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
REPLICASETS = f"/apis/apps/v1/namespaces/{NS}/replicasets"
PODS = f"/api/v1/namespaces/{NS}/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}
START_TIMEOUT = 40.0
STEP_TIMEOUT = 30.0


@dataclass
class Recorded:
    """The manager's requests to the emulator (recorded by a before_request hook)."""

    calls: list[Call] = field(default_factory=list)  # the manager's own (its tokens)
    non_resource: list[str] = field(default_factory=list)
    tokens_seen: set[str] = field(default_factory=set)
    # Every other authenticated user's resource requests (controllers' service accounts).
    by_user: dict[str, list[Call]] = field(default_factory=dict)


def _record(emu: Emulator, tokens: set[str]) -> Recorded:
    recorded = Recorded()

    async def hook(request: Any) -> None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return
        info = request_info(request.method, request.url.path, dict(request.query_params))
        resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
        call = Call(info.verb, info.api_group, resource, info.namespace, info.name)
        if token not in tokens:
            user = emu.authenticator.authenticate(token)
            if user is not None and info.is_resource_request:
                recorded.by_user.setdefault(user.name, []).append(call)
            return
        recorded.tokens_seen.add(token)
        if not info.is_resource_request:
            recorded.non_resource.append(f"{info.verb} {info.path}")
            return
        recorded.calls.append(call)

    emu.before_request.insert(0, hook)
    return recorded


def _manifest_args() -> list[str]:
    deployment = yaml.safe_load((DEPLOY / "kubernetes" / "base" / "deployment.yaml").read_text())
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def _start_in_cluster(
    emu: Emulator, tmp: Path, run_dir: Path, extra: Sequence[str] = ()
) -> ManagerProcess:
    """``pycm run`` with the Deployment's args, in a private mount namespace where
    ``run_dir`` is /run."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.fail("the in-cluster test needs root and unshare(1) (CI runs as root)")
    port = free_port()
    args = [
        a
        for a in _manifest_args()
        if not a.startswith(("--otlp-endpoint", "--secure-port", "--bind-address"))
    ]
    assert args[0] == "run"
    args += [
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        "--leader-elect-lease-duration=4s",
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=500ms",
        f"--identity={IDENTITY}",
        "--kube-api-qps=500",
        "--kube-api-burst=1000",
        "--trace-file",
        str(tmp / "trace.jsonl"),
        *extra,
    ]
    mount_at = os.path.realpath("/var/run")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KUBECONFIG", "KUBERNETES_", "OTEL_"))
    }
    env["KUBERNETES_SERVICE_HOST"] = "127.0.0.1"
    env["KUBERNETES_SERVICE_PORT"] = str(emu.port)
    log = tmp / "manager.log"
    out = log.open("wb")
    script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    proc = subprocess.Popen(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            str(run_dir),
            mount_at,
            sys.executable,
            "-m",
            "pycm",
            *args,
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        env=env,
    )
    return ManagerProcess(proc, f"https://127.0.0.1:{port}", tmp / "trace.jsonl", log, out)


def _write_atomically(path: Path, text: str) -> None:
    # The kubelet swaps projected files atomically; a reader never sees half a token.
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


@dataclass
class World:
    emu: Emulator
    api: httpx.AsyncClient
    manager: ManagerProcess
    recorded: Recorded
    sa_dir: Path
    revoked: set[str]
    manager_tokens: set[str]  # the manager's tokens the recorder follows (rotation adds one)
    scraper_token: str

    def alive(self) -> None:
        assert self.manager.proc.poll() is None, self.manager.log.read_text()[-4000:]

    async def get(self, path: str) -> dict[str, Any]:
        r = await self.api.get(path)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    async def send(self, method: str, path: str, body: Any, **kw: Any) -> dict[str, Any]:
        r = await self.api.request(method, path, content=orjson.dumps(body), **kw)
        assert r.status_code in (200, 201), r.text
        out: dict[str, Any] = r.json()
        return out

    async def until(self, what: str, check: Any, timeout: float = STEP_TIMEOUT) -> Any:
        async def once() -> Any:
            self.alive()
            return await check()

        try:
            return await poll(once, timeout=timeout, interval=0.1)
        except AssertionError as err:
            raise AssertionError(f"{what}: {err}\n{self.manager.log.read_text()[-3000:]}") from None


@contextlib.asynccontextmanager
async def world(
    tmp: Path,
    *,
    extra: Sequence[str] = (),
    roles: Sequence[Path] = MANAGER_ROLES,
    controllers: Sequence[str] = (),
    coordinated: bool = False,
) -> AsyncIterator[World]:
    policy = tmp / "policy.yaml"
    policy.write_text(yaml.safe_dump(emulator_policy(SA_USER, SCRAPER, roles, controllers)))
    async with run_emulator(
        tls=True,
        kubelet=True,
        pod_ready_delay=0.0,
        pod_terminate_delay=0.0,
        nodes=2,
        authz_policy_file=str(policy),
        # An API server without streaming lists: the informers fall back to list and watch,
        # so the list grants (which that fallback needs) are used and checked; a streaming
        # list needs only the watch grant, which both paths use.
        watch_list=False,
        coordinated_leader_election=coordinated,
    ) as emu:
        revoked: set[str] = set()
        token = secrets.token_urlsafe(24)
        user = UserInfo(SA_USER, "uid-pycm", SA_GROUPS)
        emu.authenticator.add_bound(token, user, lambda t=token: t not in revoked)
        scraper_token = secrets.token_urlsafe(24)
        emu.authenticator.add(scraper_token, UserInfo(SCRAPER, "uid-prom", ()))
        tester_token = secrets.token_urlsafe(24)
        emu.authenticator.add(tester_token, UserInfo("tester", "uid-t", (ADMIN_GROUP,)))
        manager_tokens = {token}
        recorded = _record(emu, manager_tokens)
        run_dir = tmp / "run"
        sa_dir = run_dir / "secrets" / "kubernetes.io" / "serviceaccount"
        sa_dir.mkdir(parents=True)
        assert emu.ca_pem is not None
        (sa_dir / "ca.crt").write_bytes(emu.ca_pem)
        (sa_dir / "namespace").write_text(NAMESPACE)
        _write_atomically(sa_dir / "token", token)
        headers = {"Authorization": f"Bearer {tester_token}", "Content-Type": "application/json"}
        async with httpx.AsyncClient(
            base_url=emu.url, headers=headers, timeout=10, verify=False
        ) as api:
            r = await api.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}})
            assert r.status_code == 201, r.text
            manager = _start_in_cluster(emu, tmp, run_dir, extra)
            w = World(emu, api, manager, recorded, sa_dir, revoked, manager_tokens, scraper_token)
            try:
                yield w
            finally:
                code = await stop_manager(manager)
        assert code == 0, manager.log.read_text()[-4000:]


def _deployment(name: str, image: str, replicas: int = 3) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "revisionHistoryLimit": 1,
            "selector": {"matchLabels": labels},
            "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


async def _rolled_out(w: World, name: str, image: str, replicas: int) -> bool:
    d = await w.get(f"{DEPLOYMENTS}/{name}")
    status = d.get("status", {})
    pods = [
        p
        for p in (await w.get(f"{PODS}?labelSelector=app%3D{name}"))["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]
    return (
        status.get("observedGeneration") == d["metadata"]["generation"]
        and status.get("updatedReplicas") == replicas
        and status.get("availableReplicas") == replicas
        and status.get("replicas") == replicas
        and len(pods) == replicas
        and all(p["spec"]["containers"][0]["image"] == image for p in pods)
    )


async def _lease_holder(w: World, namespace: str) -> str:
    r = await w.api.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/pycm")
    return str(r.json()["spec"].get("holderIdentity", "")) if r.status_code == 200 else ""


async def _rollout(w: World) -> None:
    """Everything the two controllers do in a rollout's life, each step awaited (bounded)."""
    await w.send("POST", DEPLOYMENTS, _deployment("web", "nginx:1.25"))
    await w.until("web rolled out", lambda: _rolled_out(w, "web", "nginx:1.25", 3))
    for image in ("nginx:1.26", "nginx:1.27"):  # the second update deletes the first old RS
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
        await w.send("PATCH", f"{DEPLOYMENTS}/web", patch, headers=MERGE)
        await w.until(f"web at {image}", lambda image=image: _rolled_out(w, "web", image, 3))

    async def one_rs() -> bool:
        return len((await w.get(f"{REPLICASETS}?labelSelector=app%3Dweb"))["items"]) <= 2

    await w.until("old ReplicaSets cleaned up", one_rs)
    await w.send("PATCH", f"{DEPLOYMENTS}/web", {"spec": {"replicas": 4}}, headers=MERGE)
    await w.until("web scaled to 4", lambda: _rolled_out(w, "web", "nginx:1.27", 4))
    # A pod relabelled out of the selector is released (its ownerReference patched away) and
    # replaced.
    pod = (await w.get(f"{PODS}?labelSelector=app%3Dweb"))["items"][0]
    name = pod["metadata"]["name"]
    await w.send("PATCH", f"{PODS}/{name}", {"metadata": {"labels": {"app": "x"}}}, headers=MERGE)

    async def released() -> bool:
        p = await w.get(f"{PODS}/{name}")
        return not p["metadata"].get("ownerReferences")

    await w.until("relabelled pod released", released)
    await w.until("web whole again", lambda: _rolled_out(w, "web", "nginx:1.27", 4))
    # Relabelled back, the orphan matches again (it kept its pod-template-hash) and is adopted:
    # first a live GET of the ReplicaSet (KCM's check that it still exists), then a patch; the
    # pod too many is deleted. (Adoption is otherwise only a race's side effect, which the
    # staleness guard makes rarer: this step uses the grant for certain.)
    await w.send("PATCH", f"{PODS}/{name}", {"metadata": {"labels": {"app": "web"}}}, headers=MERGE)

    async def readopted() -> bool:
        r = await w.api.get(f"{PODS}/{name}")
        return r.status_code == 404 or bool(r.json()["metadata"].get("ownerReferences"))

    await w.until("orphan pod adopted back", readopted)
    await w.until("web whole again", lambda: _rolled_out(w, "web", "nginx:1.27", 4))
    # An orphan ReplicaSet matching a Deployment's selector is adopted (patched) by it.
    orphan = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "api-orphan", "labels": {"app": "api"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "api"}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{"name": "app", "image": "old:1"}]},
            },
        },
    }
    await w.send("POST", REPLICASETS, orphan)

    async def orphan_has_pod() -> bool:
        return bool((await w.get(f"{PODS}?labelSelector=app%3Dapi"))["items"])

    await w.until("orphan ReplicaSet's pod", orphan_has_pod)
    await w.send("POST", DEPLOYMENTS, _deployment("api", "new:1", replicas=1))

    async def adopted() -> bool:
        rs = await w.get(f"{REPLICASETS}/api-orphan")
        return any(o.get("kind") == "Deployment" for o in rs["metadata"].get("ownerReferences", []))

    await w.until("orphan ReplicaSet adopted", adopted)
    await w.until("api rolled out", lambda: _rolled_out(w, "api", "new:1", 1))


def _implied(objects: list[dict[str, Any]], owner_resource: dict[str, str]) -> list[Call]:
    """OwnerReferencesPermissionEnforcement: writing an ownerReference that blocks its owner's
    deletion needs update on the owner's finalizers subresource."""
    calls = []
    for obj in objects:
        for ref in obj["metadata"].get("ownerReferences", []):
            if ref.get("blockOwnerDeletion") and ref["kind"] in owner_resource:
                calls.append(
                    Call(
                        "update",
                        "apps",
                        f"{owner_resource[ref['kind']]}/finalizers",
                        obj["metadata"]["namespace"],
                        ref["name"],
                        why=f" (implied by {obj['kind']} {obj['metadata']['name']})",
                    )
                )
    return calls


@pytest.mark.asyncio
async def test_incluster_manager_leads_reconciles_and_uses_exactly_the_manifests_rbac(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        # Leads, in the pod's namespace (no --leader-elect-resource-namespace in the args).
        await w.until("lease held", lambda: _lease_holder(w, NAMESPACE), timeout=START_TIMEOUT)
        assert await _lease_holder(w, NAMESPACE) == IDENTITY
        assert await _lease_holder(w, "kube-system") == ""
        await _rollout(w)

        # Token rotation: the kubelet writes a new token and the old one is revoked; the
        # manager's next 401 makes it read the file again, and it keeps leading and working.
        (first,) = w.recorded.tokens_seen
        second = secrets.token_urlsafe(24)
        user = UserInfo(SA_USER, "uid-pycm", SA_GROUPS)
        w.emu.authenticator.add_bound(second, user, lambda: True)
        w.manager_tokens.add(second)
        _write_atomically(w.sa_dir / "token", second)
        w.revoked.add(first)
        await w.send("PATCH", f"{DEPLOYMENTS}/web", {"spec": {"replicas": 2}}, headers=MERGE)
        await w.until("web scaled to 2", lambda: _rolled_out(w, "web", "nginx:1.27", 2))

        async def renewed_with_second() -> bool:
            seen = second in w.recorded.tokens_seen
            return seen and await _lease_holder(w, NAMESPACE) == IDENTITY

        await w.until("the rotated token in use", renewed_with_second)
        lease = await w.get(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/pycm")
        assert lease["spec"].get("leaseTransitions", 0) == 0  # it never lost the lease

        # /metrics for a scraper: its token is reviewed (TokenReview) and its access checked
        # (SubjectAccessReview) through the API server, with the manager's own credentials.
        async with httpx.AsyncClient(verify=False, timeout=10) as http:
            auth = {"Authorization": f"Bearer {w.scraper_token}"}
            r = await http.get(f"{w.manager.url}/metrics", headers=auth)
            assert r.status_code == 200, r.text
            assert "leader_election_master_status" in r.text
            r = await http.get(f"{w.manager.url}/metrics", headers={"Authorization": "Bearer x"})
            assert r.status_code == 401
        w.alive()
        objects = [
            *(await w.get(REPLICASETS))["items"],
            *(await w.get(PODS))["items"],
        ]
        calls = list(w.recorded.calls)
        calls += _implied(objects, {"Deployment": "deployments", "ReplicaSet": "replicasets"})
    _check_rbac(calls)


def _check_rbac(calls: list[Call]) -> None:
    """Every call allowed by some grant; every grant used by some call."""
    check_rbac(calls, grants())


# KCM's controller service accounts, which --use-service-account-credentials makes pycm use.
CONTROLLER_USERS = tuple(
    f"system:serviceaccount:kube-system:{name}"
    for name in ("deployment-controller", "replicaset-controller")
)


def _overlay_flag() -> str:
    patch = yaml.safe_load(
        (DEPLOY / "kubernetes" / "service-account-credentials" / "args.yaml").read_text()
    )
    (op,) = patch
    value: str = op["value"]
    return value


@pytest.mark.asyncio
async def test_incluster_service_account_credentials_overlay_role_is_used_and_enough(
    tmp_path: Path,
) -> None:
    """The optional overlay: pycm gets or creates the controllers' service accounts and requests
    their tokens with exactly the overlay's Role; the controllers' writes are theirs."""
    flag = _overlay_flag()
    assert flag == "--use-service-account-credentials"
    roles = (*MANAGER_ROLES, SA_CREDENTIALS_ROLE)
    async with world(tmp_path, extra=[flag], roles=roles, controllers=CONTROLLER_USERS) as w:
        await w.until("lease held", lambda: _lease_holder(w, NAMESPACE), timeout=START_TIMEOUT)
        await w.send("POST", DEPLOYMENTS, _deployment("web", "nginx:1.25", replicas=2))
        await w.until("web rolled out", lambda: _rolled_out(w, "web", "nginx:1.25", 2))
        calls = list(w.recorded.calls)
        by_user = dict(w.recorded.by_user)
    # The controllers wrote as their own accounts: the ReplicaSet and its pods.
    deployment_controller, replicaset_controller = CONTROLLER_USERS
    assert Call("create", "apps", "replicasets", NS) in by_user[deployment_controller]
    assert Call("create", "", "pods", NS) in by_user[replicaset_controller]
    assert not [c for c in calls if c.verb in ("create", "delete") and c.namespace == NS]
    # pycm's own calls: all granted (base and overlay), except that it looks for the kube-system
    # namespace when an account is missing and tolerates being refused (pycm.app.serviceaccounts).
    # (A namespace's own path puts its name in both places, as kube's RequestInfo does.)
    tolerated = {Call("get", "", "namespaces", "kube-system", "kube-system")}
    rules = grants(roles)
    refused = sorted(
        str(c) for c in calls if c not in tolerated and not any(g.allows(c) for g in rules)
    )
    assert not refused, f"used but not granted: {refused}"
    overlay = grants([SA_CREDENTIALS_ROLE])
    unused = [str(g) for g in overlay if not any(g.allows(c) for c in calls)]
    assert not unused, f"the overlay grants what pycm never uses: {unused}"


def _overlay_arg(overlay: str) -> str:
    (op,) = yaml.safe_load((DEPLOY / "kubernetes" / overlay / "args.yaml").read_text())
    value: str = op["value"]
    return value


@pytest.mark.asyncio
async def test_incluster_coordinated_overlay_role_is_used_and_enough(tmp_path: Path) -> None:
    """The coordinated-leader-election overlay against an API server whose coordinator is on:
    the replica publishes its LeaseCandidate, the coordinator makes it the holder, and every
    call pycm made is granted by base and overlay — each of the overlay's grants used."""
    flag = _overlay_arg("coordinated-leader-election")
    assert flag == "--feature-gates=CoordinatedLeaderElection=true"
    roles = (*MANAGER_ROLES, COORDINATED_ROLE)
    async with world(tmp_path, extra=[flag], roles=roles, coordinated=True) as w:
        await w.until("lease held", lambda: _lease_holder(w, NAMESPACE), timeout=START_TIMEOUT)
        await w.send("POST", DEPLOYMENTS, _deployment("web", "nginx:1.25", replicas=2))
        await w.until("web rolled out", lambda: _rolled_out(w, "web", "nginx:1.25", 2))
        candidates_path = (
            f"/apis/coordination.k8s.io/v1beta1/namespaces/{NAMESPACE}/leasecandidates"
        )
        r = await w.api.get(candidates_path)
        candidates = [c["metadata"]["name"] for c in r.json()["items"]]
        # A ping, as the coordinator sends before an election: the candidate renews (update).
        ping = "2030-01-01T00:00:00.000000Z"
        await w.send(
            "PATCH", f"{candidates_path}/{IDENTITY}", {"spec": {"pingTime": ping}}, headers=MERGE
        )

        async def renewed() -> bool:
            return any(
                c.verb == "update" and c.resource == "leasecandidates" for c in w.recorded.calls
            )

        await w.until("the candidate answered the ping", renewed)
        calls = list(w.recorded.calls)
    assert candidates == [IDENTITY]
    rules = grants(roles)
    refused = sorted(str(c) for c in calls if not any(g.allows(c) for g in rules))
    assert not refused, f"used but not granted: {refused}"
    overlay = grants([COORDINATED_ROLE])
    unused = [str(g) for g in overlay if not any(g.allows(c) for c in calls)]
    assert not unused, f"the overlay grants what pycm never uses: {unused}"


@pytest.mark.asyncio
async def test_incluster_sharded_overlay_role_is_used_and_enough(tmp_path: Path) -> None:
    """The sharded overlay: the replica joins ring pycm with its membership Lease in the pod's
    namespace (the overlay's Role), reconciles a rollout as the ring's only member, and leaves
    on SIGTERM (its Lease deleted). Every call pycm made is granted by base and overlay, and
    each of the overlay's grants is used but ``get`` (a Lease left by a restart of the same
    identity: tests/deploy/test_sharded_rbac.py makes that call)."""
    flag = _overlay_arg("sharded")
    assert flag == "--sharded"
    roles = (*MANAGER_ROLES, SHARDING_ROLE)
    member_lease = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/pycm-{IDENTITY}"
    async with world(tmp_path, extra=[flag], roles=roles) as w:

        async def joined() -> bool:
            r = await w.api.get(member_lease)
            return r.status_code == 200 and r.json()["spec"].get("holderIdentity") == IDENTITY

        await w.until("member Lease held", joined, timeout=START_TIMEOUT)
        await w.send("POST", DEPLOYMENTS, _deployment("web", "nginx:1.25", replicas=2))
        await w.until("web rolled out", lambda: _rolled_out(w, "web", "nginx:1.25", 2))
        # The ring's metrics, as Prometheus scrapes them: the only member holds all of it.
        async with httpx.AsyncClient(verify=False, timeout=10) as http:
            auth = {"Authorization": f"Bearer {w.scraper_token}"}
            r = await http.get(f"{w.manager.url}/metrics", headers=auth)
        assert r.status_code == 200, r.text
        me = f'member="{IDENTITY}",ring="pycm"'
        for sample in (
            'controller_sharding_members{ring="pycm"} 1.0',
            f"controller_sharding_share_ratio{{{me}}} 1.0",
            f"controller_sharding_drain_in_progress_seconds{{{me}}} 0.0",
            'controller_sharding_lease_lost_total{ring="pycm"} 0.0',
        ):
            assert sample in r.text.splitlines(), sample
        assert f"controller_sharding_keys_owned{{{me}}}" in r.text
        assert f"controller_sharding_objects_cached{{{me}}}" in r.text
        trace = w.manager.trace
    calls = list(w.recorded.calls)
    leave = Call("delete", "coordination.k8s.io", "leases", NAMESPACE, f"pycm-{IDENTITY}")
    assert leave in calls  # released on the way out: its namespaces move at once
    rules = grants(roles)
    refused = sorted(str(c) for c in calls if not any(g.allows(c) for g in rules))
    assert not refused, f"used but not granted: {refused}"
    overlay = [g for g in grants([SHARDING_ROLE]) if g.verb != "get"]
    unused = [str(g) for g in overlay if not any(g.allows(c) for c in calls)]
    assert not unused, f"the overlay grants what pycm never uses: {unused}"
    kinds = {orjson.loads(line)["kind"] for line in trace.read_text().splitlines() if line}
    assert {"shard.member_joined", "shard.member_left"} <= kinds
