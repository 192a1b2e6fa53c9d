"""An emulated cluster for a test session: ``pycm sim`` as a process, its admin kubeconfig,
clients, YAML apply (CRDs included), namespaces, and waiting on objects.

The emulator runs as a child process (the real HTTPS API a controller and kubectl talk to;
nothing shared with the test's own process), started once per session by the ``pycm_cluster``
fixture and stopped at its end. Reads and writes go through the official ``kubernetes``
package's dynamic client (any kind discovery serves, custom ones included), so fixtures and
tests stay synchronous: a suite needs plain pytest, no asyncio plugin.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from pycm.testing.waiting import wait_for

__all__ = ["Cluster", "ClusterError", "start_cluster"]

_LINE = re.compile(r"^pycm sim: serving (\S+) \(kubeconfig: (.+)\)$")
# How long the emulator may take to print its line, to stop, and a CRD to be established.
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
ESTABLISH_TIMEOUT = 10.0


class ClusterError(RuntimeError):
    """The emulator did not start (its stderr is in the message)."""


class Cluster:
    """A running emulator: ``url``, ``kubeconfig`` (the admin's), clients and helpers."""

    def __init__(self, proc: subprocess.Popen[Any], url: str, kubeconfig: Path) -> None:
        self.proc = proc
        self.url = url
        self.kubeconfig = kubeconfig
        self._api: Any = None
        self._dynamic: Any = None
        # Set by running in-process managers: (resource, namespace, name) -> history text.
        self.histories: list[Callable[[str, str, str], str]] = []

    # -- clients ------------------------------------------------------------------------

    @property
    def api_client(self) -> Any:
        """An official ``kubernetes.client.ApiClient`` with the admin's credentials."""
        if self._api is None:
            from kubernetes import config

            self._api = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=str(self.kubeconfig)
            )
        return self._api

    @property
    def dynamic(self) -> Any:
        """A ``kubernetes.dynamic.DynamicClient`` (discovery refreshed after a CRD applies)."""
        if self._dynamic is None:
            from kubernetes import dynamic

            self._dynamic = dynamic.DynamicClient(self.api_client)  # type: ignore[no-untyped-call]
        return self._dynamic

    def resource(self, api_version: str, kind: str) -> Any:
        """The dynamic client's resource of a kind (discovery re-read once on a miss)."""
        from kubernetes.dynamic.exceptions import ResourceNotFoundError

        try:
            return self.dynamic.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            self.dynamic.resources.invalidate_cache()
            return self.dynamic.resources.get(api_version=api_version, kind=kind)

    # -- reads and writes -----------------------------------------------------------------

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Any:
        """The object as a plain dict, or None when it does not exist."""
        from kubernetes.dynamic.exceptions import NotFoundError

        try:
            found = self.resource(api_version, kind).get(name=name, namespace=namespace or None)
        except NotFoundError:
            return None
        return found.to_dict()

    def delete(self, api_version: str, kind: str, name: str, namespace: str = "") -> None:
        """Delete it (a 404 is fine: it is gone either way)."""
        from kubernetes.dynamic.exceptions import NotFoundError

        try:
            self.resource(api_version, kind).delete(name=name, namespace=namespace or None)
        except NotFoundError:
            pass

    def apply(self, manifests: str | Path | Mapping[str, Any], namespace: str = "") -> list[Any]:
        """Create or update every object of ``manifests`` (YAML text, a file, or one object):
        created when absent, else merge-patched. ``namespace`` is the default for namespaced
        objects that name none. A CustomResourceDefinition is waited for until discovery
        serves its kind, so the objects after it in the same YAML apply."""
        out = []
        for doc in _documents(manifests):
            out.append(self._apply_one(doc, namespace))
        return out

    def _apply_one(self, doc: Mapping[str, Any], namespace: str) -> Any:
        from kubernetes.dynamic.exceptions import ConflictError

        api_version, kind = str(doc.get("apiVersion", "")), str(doc.get("kind", ""))
        meta = doc.get("metadata") or {}
        resource = self.resource(api_version, kind)
        ns = (meta.get("namespace") or namespace or "default") if resource.namespaced else None
        body = dict(doc)
        if ns is not None:
            body["metadata"] = {**meta, "namespace": ns}
        try:
            obj = resource.create(body=body, namespace=ns)
        except ConflictError:
            obj = resource.patch(
                body=body,
                name=meta.get("name"),
                namespace=ns,
                content_type="application/merge-patch+json",
            )
        if kind == "CustomResourceDefinition":
            self._wait_served(doc)
        return obj.to_dict()

    def _wait_served(self, crd: Mapping[str, Any]) -> None:
        """Wait until discovery serves the CRD's kind in each of its served versions (what
        Established promises), so that objects of it can be applied next."""
        from kubernetes.dynamic.exceptions import ResourceNotFoundError

        spec = crd.get("spec") or {}
        group, kind = str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", ""))
        versions = [str(v.get("name")) for v in spec.get("versions") or () if v.get("served")]

        def served() -> bool:
            self.dynamic.resources.invalidate_cache()
            try:
                for version in versions:
                    self.dynamic.resources.get(api_version=f"{group}/{version}", kind=kind)
            except ResourceNotFoundError:
                return False
            return True

        name = (crd.get("metadata") or {}).get("name", "")
        wait_for(served, ESTABLISH_TIMEOUT, what=f"CRD {name} to be served ({kind}.{group})")

    # -- namespaces -----------------------------------------------------------------------

    @contextmanager
    def fresh_namespace(self, prefix: str = "t") -> Iterator[str]:
        """A namespace of its own for the block, deleted after it."""
        name = f"{prefix}-{secrets.token_hex(4)}"
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        try:
            yield name
        finally:
            self.delete("v1", "Namespace", name)

    # -- waiting --------------------------------------------------------------------------

    def wait_for_object(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str = "",
        predicate: Callable[[Any], Any] = bool,
        timeout: float = 10.0,
    ) -> Any:
        """Wait until the object exists and ``predicate(obj)`` holds; return the object. On
        timeout the failure shows its last state and its history in the running managers
        (which reconciles touched it, and why: ``pycm why``'s text)."""
        seen: list[Any] = [None]

        def check() -> Any:
            seen[0] = self.get(api_version, kind, name, namespace)
            return seen[0] if seen[0] is not None and predicate(seen[0]) else None

        def describe() -> str:
            state = yaml.safe_dump(seen[0], sort_keys=False) if seen[0] else "(absent)\n"
            text = [f"last state of {kind} {namespace + '/' if namespace else ''}{name}:", state]
            plural = self.resource(api_version, kind).name
            for history in self.histories:
                text.append(history(plural, namespace, name))
            return "\n".join(text).rstrip()

        what = f"{kind} {namespace + '/' if namespace else ''}{name}"
        if predicate is not bool:
            what += f" to satisfy {getattr(predicate, '__name__', 'the predicate')}"
        return wait_for(check, timeout, what=what, describe=describe)

    # -- lifetime -------------------------------------------------------------------------

    def stop(self) -> int:
        """Stop the emulator (SIGTERM, bounded); its exit status."""
        if self._api is not None:
            self._api.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)


def _documents(manifests: str | Path | Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    if isinstance(manifests, Mapping):
        return [manifests]
    text = manifests.read_text() if isinstance(manifests, Path) else manifests
    return [doc for doc in yaml.safe_load_all(text) if doc]


def start_cluster(workdir: Path, *args: str) -> Cluster:
    """Start ``pycm sim`` (TLS, any free port, the kubeconfig written into ``workdir``) and
    wait for its one line; ``args`` are more ``pycm sim`` flags (``--kubelet=off``, …)."""
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = workdir / "kubeconfig"
    # Never the user's own cluster: KUBECONFIG points nowhere for the child.
    env = {**os.environ, "KUBECONFIG": str(workdir / "no-such-kubeconfig")}
    env["PYTHONUNBUFFERED"] = "1"
    argv = [sys.executable, "-m", "pycm.sim", "--port", "0", "--kubeconfig-out", str(kubeconfig)]
    # Its output goes to files (a pipe nobody reads would fill and block it): the first line
    # of stdout says where it serves; stderr is its log, quoted when it does not start.
    out, err = workdir / "sim.out", workdir / "sim.log"
    with out.open("w") as out_file, err.open("w") as err_file:
        proc = subprocess.Popen(
            [*argv, *args], stdout=out_file, stderr=err_file, text=True, env=env
        )
    deadline = time.monotonic() + START_TIMEOUT
    line = ""
    while time.monotonic() < deadline and proc.poll() is None:
        text = out.read_text()
        if "\n" in text:
            line = text.partition("\n")[0].strip()
            break
        time.sleep(0.02)
    match = _LINE.match(line)
    if match is None:
        proc.kill()
        proc.wait(timeout=STOP_TIMEOUT)
        raise ClusterError(
            f"pycm sim did not start: printed {line!r}; its log: {err.read_text().strip()}"
        )
    return Cluster(proc, match.group(1), Path(match.group(2)))
