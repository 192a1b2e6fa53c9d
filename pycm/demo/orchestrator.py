"""The demo's composition: emulator → replicas → their event streams → workload → verdict.

Start order: a private temp dir → the emulator (``python -m pycm sim --kubelet=on``, its own
process, over TLS so that its kubeconfig works for kubectl too; we read its one ``serving``
line) → three ``pycm run``
replicas (free secure ports on 127.0.0.1, ``--cert-dir`` and ``--trace-file`` in the temp dir,
short election timings) → one event stream per replica → once some replica has acquired the
lease, the workload (a Deployment) and a watch that prints its rollout. Stop order is the
reverse: streams and the workload watch are cancelled, the replicas get SIGTERM together (they
release the lease: ReleaseOnCancel), then the emulator; each child is SIGKILLed if it outlives
its bound; the temp dir is removed.

With ``--sharded`` the emulator serves KEP-5866's sharded list and watch, the replicas run as
members of one ring (``pycm run --sharded``, the same short timings) and the workload is one
Deployment in each of several namespaces, so each member rolls out its own share.

The verdict (the exit status of ``--duration``): 0 when a leader was elected and no child
exited unexpectedly; otherwise 1 and the reasons, one line each.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pycm.demo.processes import Child
from pycm.demo.stream import EventFormatter, ReplicaStream
from pycm.kube import DEPLOYMENTS, NAMESPACES, AlreadyExists, Client, KubeError, load_config
from pycm.trace.events import Event
from pycm.util.ports import free_port

__all__ = ["DemoOptions", "Orchestrator"]

_SERVING = re.compile(r"pycm sim: serving (?P<url>\S+) \(kubeconfig: (?P<path>.+)\)")
# From the demo's start to some replica's lease.acquired: beyond it, --duration gives up.
LEADER_TIMEOUT = 60.0
EMULATOR_START_TIMEOUT = 20.0  # importing the emulator and binding takes ~1-2 s; slow CI more
WORKLOAD = "demo-web"
# The sharded demo's namespaces: names that differ in their first characters, which kube's
# FNV-1a spreads over the ring (docs/operations.md, "Sharding").
SHARDED_NAMESPACES = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")


@dataclass(frozen=True, slots=True)
class DemoOptions:
    replicas: tuple[str, ...] = ("replica-a", "replica-b", "replica-c")
    lease_duration: str = "4s"
    renew_deadline: str = "3s"
    retry_period: str = "1s"
    pod_ready_delay: str = "1s"
    workload_replicas: int = 3
    duration: float | None = None  # None: until Ctrl-C / SIGTERM
    python: str = sys.executable
    sharded: bool = False  # --sharded: the replicas split the namespaces instead of electing


@dataclass
class Replica:
    identity: str
    port: int
    child: Child
    cert_file: Path
    trace_file: Path

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


@dataclass
class Verdict:
    leaders: list[str] = field(default_factory=list)  # identities that acquired, in order
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.leaders) and not self.problems


class Orchestrator:
    def __init__(self, options: DemoOptions, out: Callable[[str], None]) -> None:
        self.options = options
        self.out = out
        self.formatter = EventFormatter(width=max(len(r) for r in options.replicas))
        self.verdict = Verdict()
        self.replicas: list[Replica] = []
        self.emulator: Child | None = None
        self._leader = asyncio.Event()
        self._failed = asyncio.Event()
        self._leader_timed_out = False
        self._dir = Path()
        self._tasks: list[asyncio.Task[Any]] = []

    async def run(self, stop: asyncio.Event) -> Verdict:
        """Run until ``stop`` is set, the duration passes or a child dies; then stop it all."""
        self._dir = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="pycm-demo-"))
        main = self._spawn(self._main(), "demo-main")
        waiting = {main, self._spawn(stop.wait(), "demo-stop")}
        waiting.add(self._spawn(self._failed.wait(), "demo-failed"))
        if self.options.duration is not None:
            waiting.add(self._spawn(self._timer(self.options.duration), "demo-timer"))
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # Stop order: our tasks (streams, workload, timers), the replicas, the emulator.
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await asyncio.shield(self._stop_all())
            await asyncio.to_thread(shutil.rmtree, self._dir, True)
        if main.done() and not main.cancelled() and (err := main.exception()) is not None:
            if not isinstance(err, DemoError | KubeError | OSError):
                raise err
            self.verdict.problems.append(str(err))
        elif not self.verdict.leaders:
            within = f" within {LEADER_TIMEOUT:.0f} s of start-up" if self._leader_timed_out else ""
            self.verdict.problems.append(f"no replica acquired the lease{within}")
        return self.verdict

    async def _timer(self, duration: float) -> None:
        """``--duration``: S seconds of the running demo, counted once a replica leads.

        Counting from the lease, not from the first process, keeps what a user sees the same on
        a slow machine: three replicas' start-up (imports, TLS, informers) takes 2 s on an idle
        laptop and 15 s on a loaded 2-core runner. The start-up itself has its own bound.
        """
        try:
            async with asyncio.timeout(LEADER_TIMEOUT):
                await self._leader.wait()
        except TimeoutError:
            self._leader_timed_out = True
            return
        await asyncio.sleep(duration)

    @property
    def workdir(self) -> Path:
        """The demo's private temp dir (kubeconfig, logs, traces, certs); removed at exit."""
        return self._dir

    def supervise(self, child: Child) -> asyncio.Task[None]:
        """Watch a (re)started child: an exit the demo did not ask for fails the demo."""
        return self._spawn(self._supervise(child), f"demo-wait-{child.name}-{child.generation}")

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.append(task)
        return task

    async def _main(self) -> None:
        kubeconfig = await self._start_emulator()
        config = await load_config(kubeconfig, user_agent="pycm-demo")
        token = config.token or ""
        await self._start_replicas(kubeconfig)
        for replica in self.replicas:
            self.out(f"{replica.child.name}: {replica.url} (trace: {replica.trace_file.name})")
        for replica in self.replicas:
            stream = ReplicaStream(
                replica.identity,
                replica.url,
                replica.cert_file,
                token,
                self._on_event,
                _generation_of(replica.child),
            )
            self._spawn(stream.run(), f"demo-stream-{replica.identity}")
            self.supervise(replica.child)
        assert self.emulator is not None
        self.supervise(self.emulator)
        await self._leader.wait()
        async with await Client.connect(config) as client:
            await self._workload(client)

    async def _start_emulator(self) -> str:
        kubeconfig = self._dir / "kubeconfig"
        # Stated, not defaulted: the simulated kubelet makes the workload's pods Ready, so the
        # rollout completes on screen. Over TLS (its own CA, in the kubeconfig): client-go, so
        # kubectl, sends no bearer token over plain HTTP, and a user's kubectl is the first
        # thing pointed at the kubeconfig the demo prints.
        argv = [
            self.options.python,
            "-m",
            "pycm",
            "sim",
            "--port",
            "0",
            "--tls=true",
            "--kubelet=on",
        ]
        if self.options.sharded:
            argv += ["--feature-gates=ShardedListAndWatch=true"]
        argv += ["--kubeconfig-out", str(kubeconfig), "--pod-ready-delay"]
        argv += [self.options.pod_ready_delay]
        self.emulator = Child("emulator", argv, self._dir / "emulator.log")
        await self.emulator.start(capture_stdout=True)
        process = self.emulator.process
        assert process is not None and process.stdout is not None
        try:
            async with asyncio.timeout(EMULATOR_START_TIMEOUT):
                while line := (await process.stdout.readline()).decode(errors="replace"):
                    if match := _SERVING.search(line):
                        self.out(f"emulator: {match['url']} (kubeconfig: {match['path']})")
                        return match["path"]
        except TimeoutError:
            pass
        raise DemoError(f"the emulator did not start (see {self._dir / 'emulator.log'})")

    async def _start_replicas(self, kubeconfig: str) -> None:
        o = self.options
        for identity in o.replicas:
            port = free_port()
            certs = self._dir / f"certs-{identity}"
            trace = self._dir / f"{identity}.jsonl"
            argv = [o.python, "-m", "pycm", "run", "--kubeconfig", kubeconfig]
            argv += ["--leader-elect-lease-duration", o.lease_duration]
            argv += ["--leader-elect-renew-deadline", o.renew_deadline]
            argv += ["--leader-elect-retry-period", o.retry_period]
            argv += ["--secure-port", str(port), "--bind-address", "127.0.0.1"]
            argv += ["--cert-dir", str(certs), "--identity", identity, "--trace-file", str(trace)]
            if o.sharded:
                argv += ["--sharded", "--sharding-lease-duration", o.lease_duration]
                argv += ["--sharding-renew-deadline", o.renew_deadline]
                argv += ["--sharding-retry-period", o.retry_period]
            child = Child(identity, argv, self._dir / f"{identity}.log")
            await child.start()
            self.replicas.append(Replica(identity, port, child, certs / "pycm.crt", trace))

    async def _supervise(self, child: Child) -> None:
        code = await child.wait()
        if not child.stopping:
            problem = f"{child.name} exited unexpectedly with status {code}"
            self.verdict.problems.append(problem)
            self.out(f"pycm demo: {problem}; the end of its log:")
            for line in await asyncio.to_thread(_tail, self._dir / f"{child.name}.log"):
                self.out(f"  {line}")  # the temp dir, log included, is removed at exit
            self._failed.set()

    def _on_event(self, replica: str, event: Event) -> None:
        if event.KIND == "lease.acquired":
            self.verdict.leaders.append(replica)
            self._leader.set()
        line = self.formatter.format(replica, event)
        if line is not None:
            self.out(line)

    async def _workload(self, client: Client) -> None:
        """Create the Deployment (one a namespace when sharded), then print each rollout each
        time its status changes."""
        namespaces = self.workload_namespaces()
        for namespace in namespaces:
            if namespace != "default":
                with contextlib.suppress(AlreadyExists):
                    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
            body = _deployment(WORKLOAD, self.options.workload_replicas, namespace)
            try:
                await client.create(DEPLOYMENTS, body, namespace=namespace)
                self.out(f"workload: created deployment {namespace}/{WORKLOAD}")
            except AlreadyExists:
                pass
        last: dict[str, tuple[int, ...]] = {}
        while True:
            try:
                async with client.watch(
                    DEPLOYMENTS, namespace="", field_selector=f"metadata.name={WORKLOAD}"
                ) as stream:
                    async for event in stream:
                        if event.type not in ("ADDED", "MODIFIED"):
                            continue  # BOOKMARK objects carry only a resourceVersion
                        meta = event.object.get("metadata") or {}
                        namespace = str(meta.get("namespace") or "")
                        if namespace not in namespaces:
                            continue
                        now = _rollout(event.object)
                        if now != last.get(namespace):
                            last[namespace] = now
                            where = WORKLOAD if len(namespaces) == 1 else f"{namespace}/{WORKLOAD}"
                            self.out(
                                f"workload: {where} desired={now[0]} updated={now[1]} "
                                f"ready={now[2]} available={now[3]}"
                            )
            except KubeError:
                await asyncio.sleep(1.0)

    def workload_namespaces(self) -> tuple[str, ...]:
        """Where the demo Deployment is: default, or each of the sharded demo's namespaces."""
        return SHARDED_NAMESPACES if self.options.sharded else ("default",)

    async def _stop_all(self) -> None:
        stopping = [r.child.stop() for r in self.replicas]
        codes = await asyncio.gather(*stopping, return_exceptions=True)
        for replica, code in zip(self.replicas, codes, strict=True):
            if isinstance(code, BaseException) or code not in (0, None):
                self.out(f"pycm demo: {replica.identity} stopped with status {code}")
        if self.emulator is not None:
            with contextlib.suppress(ProcessLookupError):
                await self.emulator.stop()


class DemoError(Exception):
    """The demo could not start (the message says what and where the log is)."""


def _tail(path: Path, lines: int = 10) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def _generation_of(child: Child) -> Callable[[], int]:
    return lambda: child.generation


def _rollout(deployment: dict[str, Any]) -> tuple[int, ...]:
    """(desired, updated, ready, available) of a Deployment."""
    status = deployment.get("status") or {}
    spec = deployment.get("spec") or {}
    return tuple(
        int(v or 0)
        for v in (
            spec.get("replicas"),
            status.get("updatedReplicas"),
            status.get("readyReplicas"),
            status.get("availableReplicas"),
        )
    )


def _deployment(name: str, replicas: int, namespace: str = "default") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }
