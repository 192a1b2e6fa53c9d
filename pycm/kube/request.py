"""What a request is, built before it is sent (httpx's ``build_request`` → ``send``).

:class:`ApiRequest` holds everything the send path (:mod:`pycm.kube.send`) needs: the verb and
object it is about (for its trace event and metrics), the method, path, query, body, Accept,
Content-Type, timeout and whether the response is streamed. The verbs of
:class:`~pycm.kube.client.Client` only build one and send it.

:class:`ListOptions` is the query of a list or a watch, as apimachinery's ``metav1.ListOptions``:
the selectors, paging, the resourceVersion semantics and the watch-only settings, in one value a
caller can pass around and vary (``dataclasses.replace``) instead of ten keyword arguments.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from pycm.api.labels import Selector
from pycm.kube.resources import Resource

__all__ = [
    "ACCEPT_JSON",
    "ACCEPT_METADATA",
    "ACCEPT_METADATA_LIST",
    "CONTENT_JSON",
    "DEFAULT_PAGE_SIZE",
    "WATCH_READ_MARGIN",
    "ApiRequest",
    "ListOptions",
    "PatchType",
    "delete_options",
    "list_request",
    "obj_namespace",
    "put_param",
    "selector_param",
    "watch_request",
    "write_params",
    "write_request",
]

Obj = dict[str, Any]

ACCEPT_JSON = "application/json"
ACCEPT_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
ACCEPT_METADATA_LIST = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)
CONTENT_JSON = "application/json"
# client-go's pager asks for 500 items a page.
DEFAULT_PAGE_SIZE = 500
# A watch's read timeout is its timeoutSeconds plus this margin, so the server ends it first.
WATCH_READ_MARGIN = 30.0


class PatchType(enum.StrEnum):
    """The patch flavours, by the Content-Type that names them."""

    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    JSON = "application/json-patch+json"
    APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True, slots=True)
class ListOptions:
    """The query of a list or a watch (``metav1.ListOptions``). Unset (None) fields are not
    sent. A list ignores the watch-only fields (``allow_watch_bookmarks``, ``timeout_seconds``,
    ``send_initial_events``); a watch ignores ``limit`` and ``continue_``.

    ``shard_selector`` is KEP-5866's (``pycm.api.sharding``): a server with the
    ShardedListAndWatch gate filters by it and says so in ``metadata.shardInfo``; one without
    it ignores the parameter and sends everything. A streaming list (WatchList) is a watch with
    ``send_initial_events=True`` and ``resource_version_match="NotOlderThan"`` (the server
    requires both).
    """

    label_selector: str | Selector | None = None
    field_selector: str | None = None
    shard_selector: str | None = None
    limit: int | None = None
    continue_: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None
    # Watch only. Bookmarks are asked for unless turned off (Client.watch's default).
    allow_watch_bookmarks: bool = True
    timeout_seconds: int | None = None
    send_initial_events: bool | None = None

    def list_params(self) -> dict[str, str]:
        """The query parameters of a list (one page)."""
        params: dict[str, str] = {}
        put_param(params, "labelSelector", selector_param(self.label_selector))
        put_param(params, "fieldSelector", self.field_selector)
        put_param(params, "shardSelector", self.shard_selector)
        put_param(params, "limit", str(self.limit) if self.limit else None)
        put_param(params, "continue", self.continue_)
        put_param(params, "resourceVersion", self.resource_version)
        put_param(params, "resourceVersionMatch", self.resource_version_match)
        return params

    def watch_params(self) -> dict[str, str]:
        """The query parameters of a watch."""
        params: dict[str, str] = {"watch": "true"}
        put_param(params, "labelSelector", selector_param(self.label_selector))
        put_param(params, "fieldSelector", self.field_selector)
        put_param(params, "shardSelector", self.shard_selector)
        put_param(params, "resourceVersion", self.resource_version)
        put_param(params, "resourceVersionMatch", self.resource_version_match)
        if self.allow_watch_bookmarks:
            params["allowWatchBookmarks"] = "true"
        if self.timeout_seconds is not None:
            params["timeoutSeconds"] = str(int(self.timeout_seconds))
        if self.send_initial_events is not None:
            params["sendInitialEvents"] = "true" if self.send_initial_events else "false"
        return params


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """One request, built and not yet sent. ``verb`` (get, list, watch, create, ...) and the
    object it names (``resource``, ``subresource``, ``namespace``, ``name``) are what its trace
    event and metrics say; the rest is what goes on the wire. ``timeout`` None is the
    configuration's; ``stream`` returns the response open (a watch's)."""

    verb: str
    method: str
    path: str
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    params: dict[str, str] = field(default_factory=dict)
    content: bytes | None = None
    accept: str = ACCEPT_JSON
    content_type: str | None = None
    timeout: httpx.Timeout | None = None
    stream: bool = False

    @property
    def dry_run(self) -> bool:
        return "dryRun" in self.params


def list_request(
    res: Resource, namespace: str | None, options: ListOptions, metadata_only: bool
) -> ApiRequest:
    """One page of a list."""
    return ApiRequest(
        "list",
        "GET",
        res.path(namespace),
        res.resource,
        namespace=namespace or "",
        params=options.list_params(),
        accept=ACCEPT_METADATA_LIST if metadata_only else ACCEPT_JSON,
    )


def write_request(
    verb: str,
    method: str,
    res: Resource,
    namespace: str | None,
    body: Any,
    *,
    name: str = "",
    subresource: str = "",
    params: dict[str, str] | None = None,
    content_type: str = CONTENT_JSON,
) -> ApiRequest:
    """A request carrying ``body`` as JSON (a create, update, patch or delete)."""
    return ApiRequest(
        verb,
        method,
        res.path(namespace, name, subresource),
        res.resource,
        subresource,
        namespace or "",
        name,
        params=params if params is not None else {},
        content=orjson.dumps(body),
        content_type=content_type,
    )


def watch_request(
    res: Resource,
    namespace: str | None,
    options: ListOptions,
    metadata_only: bool,
    connect_timeout: float | None,
) -> ApiRequest:
    """A watch stream: its read timeout is the server's ``timeoutSeconds`` plus a margin (none
    without one), the rest of its timeouts the configuration's."""
    seconds = options.timeout_seconds
    read = seconds + WATCH_READ_MARGIN if seconds else None
    timeout = httpx.Timeout(
        connect=connect_timeout, read=read, write=connect_timeout, pool=connect_timeout
    )
    return ApiRequest(
        "watch",
        "GET",
        res.path(namespace),
        res.resource,
        namespace=namespace or "",
        params=options.watch_params(),
        accept=ACCEPT_METADATA if metadata_only else ACCEPT_JSON,
        timeout=timeout,
        stream=True,
    )


def selector_param(value: str | Selector | None) -> str | None:
    """A label selector as the query parameter's string."""
    if value is None:
        return None
    return value if isinstance(value, str) else value.to_string()


def put_param(params: dict[str, str], key: str, value: str | None) -> None:
    """Set a query parameter unless its value is unset or empty."""
    if value is not None and value != "":
        params[key] = value


def obj_namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def write_params(dry_run: bool, field_manager: str | None) -> dict[str, str]:
    params: dict[str, str] = {}
    if dry_run:
        params["dryRun"] = "All"
    put_param(params, "fieldManager", field_manager)
    return params


def delete_options(
    uid: str | None,
    resource_version: str | None,
    propagation_policy: str | None,
    grace_period_seconds: int | None,
    dry_run: bool,
) -> Obj:
    """A DeleteOptions body (preconditions on uid and resourceVersion when given)."""
    options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
    preconditions = {}
    if uid is not None:
        preconditions["uid"] = uid
    if resource_version is not None:
        preconditions["resourceVersion"] = resource_version
    if preconditions:
        options["preconditions"] = preconditions
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if dry_run:
        options["dryRun"] = ["All"]
    return options
