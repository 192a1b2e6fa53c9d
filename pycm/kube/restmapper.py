"""A REST mapper over discovery: from a kind (or a plural) to the :class:`Resource` that
serves it — its plural, scope and subresources — as client-go's deferred discovery mapper.

A controller names ``("example.com", "v1", "Website")`` and gets the resource its informers,
listers and client calls need, custom resources exactly like built-ins. Discovery is read
lazily, one group-version document at a time (``/api/v1``, ``/apis/<group>/<version>``; the
group's preferred version from ``/apis/<group>`` when none is given), and cached. A miss reads
the document again before it fails (a CRD installed since the last read is found), and
:meth:`RESTMapper.reset` drops the cache, as KCM resets its mapper every 30 s.

A kind nobody serves raises :class:`NoKindMatchError` with apimachinery's message,
``no matches for kind "Website" in version "example.com/v1"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pycm.errors import PycmError
from pycm.kube.errors import NotFound
from pycm.kube.resources import Resource

__all__ = ["DiscoveryClient", "NoKindMatchError", "RESTMapper"]


class NoKindMatchError(PycmError, LookupError):
    """No served resource has this kind (or plural) in this group and version."""

    def __init__(self, group: str, version: str, kind: str = "", plural: str = "") -> None:
        self.group, self.version, self.kind, self.plural = group, version, kind, plural
        gv = f"{group}/{version}" if group else version
        if kind:
            message = f'no matches for kind "{kind}" in version "{gv}"'
        else:
            message = f"no matches for {gv}, Resource={plural}"
        super().__init__(message)

    @property
    def what(self) -> str:
        """``Website in example.com/v1``: the kind (or plural) and its group-version."""
        gv = f"{self.group}/{self.version}" if self.group else self.version
        return f"{self.kind or self.plural} in {gv}"

    def __str__(self) -> str:
        return str(self.args[0])


class DiscoveryClient(Protocol):
    """The subset of :class:`~pycm.kube.client.Client` the mapper uses."""

    async def request(self, method: str, path: str, *, verb: str = "") -> Any: ...


class RESTMapper:
    """Kinds and plurals to resources, from the server's discovery documents (cached)."""

    def __init__(self, client: DiscoveryClient) -> None:
        self._client = client
        # (group, version) -> that group-version's resources (None: not served).
        self._by_gv: dict[tuple[str, str], list[Resource] | None] = {}
        self._preferred: dict[str, str] = {}  # group -> its preferred version

    def reset(self) -> None:
        """Forget what was read: the next lookup reads discovery again."""
        self._by_gv.clear()
        self._preferred.clear()

    async def resource_for(self, group: str, version: str, kind: str) -> Resource:
        """The resource serving ``kind`` in ``group``/``version`` (version "" → the group's
        preferred one); :class:`NoKindMatchError` when none does."""
        found = await self._find(group, version, lambda r: r.kind == kind)
        if found is None:
            raise NoKindMatchError(group, version or await self._version(group), kind=kind)
        return found

    async def resource_for_plural(self, group: str, version: str, plural: str) -> Resource:
        """The resource ``plural`` of ``group``/``version`` (a GVR), with its kind and scope."""
        found = await self._find(group, version, lambda r: r.resource == plural)
        if found is None:
            raise NoKindMatchError(group, version or await self._version(group), plural=plural)
        return found

    async def _find(self, group: str, version: str, match: Any) -> Resource | None:
        read = False
        for fresh in (False, True):  # a miss on cached documents reads them again, once
            if fresh and read:
                break
            gv = (group, version or await self._version(group, fresh=fresh))
            if not gv[1]:
                continue
            if fresh or gv not in self._by_gv:
                self._by_gv[gv] = await self._read(*gv)
                read = True
            for resource in self._by_gv[gv] or ():
                if match(resource):
                    return resource
        return None

    async def _version(self, group: str, *, fresh: bool = False) -> str:
        """The group's preferred version ("" when the group is not served)."""
        if not group:
            return "v1"
        if fresh or group not in self._preferred:
            try:
                doc = (await self._client.request("GET", f"/apis/{group}", verb="get")).json()
            except NotFound:
                return ""
            preferred = (doc.get("preferredVersion") or {}).get("version") or ""
            self._preferred[group] = str(preferred)
        return self._preferred[group]

    async def _read(self, group: str, version: str) -> list[Resource] | None:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            doc = (await self._client.request("GET", path, verb="get")).json()
        except NotFound:
            return None
        return _resources(group, version, doc.get("resources") or ())


def _resources(group: str, version: str, entries: Any) -> list[Resource]:
    """The main resources of an APIResourceList, each with the subresources listed for it
    (``deployments/status`` → ``status`` of ``deployments``)."""
    subresources: dict[str, set[str]] = {}
    mains: list[Mapping[str, Any]] = []
    for entry in entries:
        name = str(entry.get("name") or "")
        plural, _, sub = name.partition("/")
        if sub:
            subresources.setdefault(plural, set()).add(sub)
        elif name:
            mains.append(entry)
    return [
        Resource(
            group,
            version,
            str(entry["name"]),
            str(entry.get("kind") or ""),
            bool(entry.get("namespaced")),
            frozenset(subresources.get(str(entry["name"]), ())),
        )
        for entry in mains
    ]
