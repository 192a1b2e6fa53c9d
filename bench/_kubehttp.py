"""A minimal async list/watch HTTP client (httpx + orjson) — a stand-in for ``pycm.kube.Client``.

``pycm.kube.Client`` was not in the tree when the informer benchmark and the emulator tests were
written, so they drive :class:`pycm.cache.ClientListWatch` over this small client with the same
``list``/``watch`` signatures. It does only what informers need: list (paged, metadata-only),
watch (streamed JSON lines, bookmarks), create/update/delete for seeding, bearer-token auth.
Failures raise :class:`pycm.cache.listwatch.StatusError` carrying the Status code and reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

from pycm.cache.listwatch import StatusError

PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


@dataclass(frozen=True, slots=True)
class Res:
    """The fields of ``pycm.kube.resources.Resource`` this client needs."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool = True


PODS = Res("", "v1", "pods", "Pod")


class SizedList(dict[str, Any]):
    """A decoded list that remembers its encoded size (read by ClientListWatch)."""

    size_bytes = 0


def token_from_kubeconfig(path: str | Path) -> str:
    config = yaml.safe_load(Path(path).read_text())
    return str(config["users"][0]["user"]["token"])


class HttpClient:
    def __init__(self, url: str, token: str, *, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}"},
            verify=False,
            timeout=httpx.Timeout(timeout, read=None),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    @staticmethod
    def path(res: Res, namespace: str | None, name: str | None = None) -> str:
        base = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
        if res.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{res.resource}"
        return f"{base}/{name}" if name else base

    @staticmethod
    def _raise(response: httpx.Response, body: bytes) -> None:
        try:
            status = orjson.loads(body)
        except orjson.JSONDecodeError:
            status = {}
        if not isinstance(status, dict):
            status = {}
        raise StatusError(
            int(status.get("code") or response.status_code),
            str(status.get("reason") or ""),
            str(status.get("message") or ""),
        )

    async def list(
        self,
        resource: Res,
        *,
        namespace: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> SizedList:
        params: dict[str, Any] = {}
        if limit:
            params["limit"] = limit
        if continue_:
            params["continue"] = continue_
        if resource_version is not None and resource_version != "":
            params["resourceVersion"] = resource_version
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        headers = {"Accept": PARTIAL_LIST if metadata_only else "application/json"}
        response = await self._http.get(
            self.path(resource, namespace), params=params, headers=headers
        )
        body = response.content
        if response.status_code >= 400:
            self._raise(response, body)
        out = SizedList(orjson.loads(body))
        out.size_bytes = len(body)
        return out

    @asynccontextmanager
    async def watch(
        self,
        resource: Res,
        *,
        namespace: str | None = None,
        resource_version: str = "",
        allow_watch_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> AsyncIterator[AsyncIterator[tuple[str, Any]]]:
        params: dict[str, Any] = {"watch": "true"}
        if resource_version:
            params["resourceVersion"] = resource_version
        if allow_watch_bookmarks:
            params["allowWatchBookmarks"] = "true"
        if timeout_seconds:
            params["timeoutSeconds"] = timeout_seconds
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        headers = {"Accept": PARTIAL if metadata_only else "application/json"}
        async with self._http.stream(
            "GET", self.path(resource, namespace), params=params, headers=headers
        ) as response:
            if response.status_code >= 400:
                self._raise(response, await response.aread())
            yield self._events(response)

    @staticmethod
    async def _events(response: httpx.Response) -> AsyncIterator[tuple[str, Any]]:
        try:
            async for line in response.aiter_lines():
                if line:
                    event = orjson.loads(line)
                    yield event["type"], event["object"]
        except (httpx.RemoteProtocolError, httpx.ReadError):
            return  # the server ended the stream abruptly: an early close

    async def create(self, resource: Res, obj: dict[str, Any], namespace: str) -> Any:
        return await self._write("POST", self.path(resource, namespace), obj)

    async def replace(self, resource: Res, obj: dict[str, Any], namespace: str) -> Any:
        name = obj["metadata"]["name"]
        return await self._write("PUT", self.path(resource, namespace, name), obj)

    async def delete(self, resource: Res, namespace: str, name: str) -> Any:
        return await self._write("DELETE", self.path(resource, namespace, name), None)

    async def get(self, resource: Res, namespace: str, name: str) -> Any:
        response = await self._http.get(self.path(resource, namespace, name))
        if response.status_code >= 400:
            self._raise(response, response.content)
        return orjson.loads(response.content)

    async def _write(self, method: str, path: str, obj: dict[str, Any] | None) -> Any:
        content = orjson.dumps(obj) if obj is not None else None
        response = await self._http.request(
            method, path, content=content, headers={"Content-Type": "application/json"}
        )
        if response.status_code >= 400:
            self._raise(response, response.content)
        return orjson.loads(response.content)
