"""The async Kubernetes API client: configuration, verbs, watch streams, errors.

- :func:`load_config` → :class:`ClientConfig` (kubeconfig / ``--master`` / KUBECONFIG /
  in-cluster, KCM's precedence); :class:`ConfigError` when none is usable.
- :class:`Client` (``await Client.connect(config)``): ``get``, ``list``, ``list_all``, ``watch``,
  ``create``, ``update``, ``update_status``, ``patch``, ``apply`` (server-side), ``delete``,
  ``delete_collection``, ``get_scale``, ``update_scale``, ``request``. Objects are plain dicts.
  A list's or watch's query is keywords or one :class:`ListOptions`; each verb builds a
  :class:`~pycm.kube.request.ApiRequest` and sends it (:mod:`pycm.kube.send`).
- :mod:`pycm.kube.resources`: :class:`Resource` and the constants (``PODS``, ``LEASES``, ...).

Exceptions (see :mod:`pycm.kube.errors`; the whole tree is drawn in :mod:`pycm.errors`)::

    PycmError
     ├── KubeError
     │    ├── ApiError ── BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed,
     │    │               AlreadyExists, Conflict, Expired (= Gone), Invalid, TooManyRequests,
     │    │               Timeout, ServerError, StatusError (a Status met outside HTTP)
     │    ├── TransportError
     │    └── FencedError (a write refused unsent: the lease renew is older than the deadline)
     └── ConfigError (beside KubeError: a configuration that cannot work is not retried)

Test double: pass ``transport=httpx.MockTransport(handler)`` to :class:`Client`.
"""

from pycm.kube.client import (
    Client,
    ListOptions,
    ListResult,
    PatchType,
    RateLimiter,
    Response,
)
from pycm.kube.config import ClientConfig, ConfigError, load_config, load_incluster_config
from pycm.kube.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Expired,
    FencedError,
    Forbidden,
    Gone,
    Invalid,
    KubeError,
    MethodNotAllowed,
    NotFound,
    ServerError,
    StatusError,
    Timeout,
    TooManyRequests,
    TransportError,
    Unauthorized,
    is_already_exists,
    is_conflict,
    is_expired,
    is_forbidden,
    is_invalid,
    is_not_found,
    is_timeout,
    is_too_large_resource_version,
    is_too_many_requests,
    is_unauthorized,
)
from pycm.kube.resources import (
    CONFIGMAPS,
    DEPLOYMENTS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    REPLICASETS,
    SUBJECTACCESSREVIEWS,
    TOKENREVIEWS,
    Resource,
    by_kind,
    by_plural,
)
from pycm.kube.watch import Watch, WatchEvent

__all__ = [
    "CONFIGMAPS",
    "DEPLOYMENTS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PODS",
    "REPLICASETS",
    "SUBJECTACCESSREVIEWS",
    "TOKENREVIEWS",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Client",
    "ClientConfig",
    "ConfigError",
    "Conflict",
    "Expired",
    "FencedError",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeError",
    "ListOptions",
    "ListResult",
    "MethodNotAllowed",
    "NotFound",
    "PatchType",
    "RateLimiter",
    "Resource",
    "Response",
    "ServerError",
    "StatusError",
    "Timeout",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "Watch",
    "WatchEvent",
    "by_kind",
    "by_plural",
    "is_already_exists",
    "is_conflict",
    "is_expired",
    "is_forbidden",
    "is_invalid",
    "is_not_found",
    "is_timeout",
    "is_too_large_resource_version",
    "is_too_many_requests",
    "is_unauthorized",
    "load_config",
    "load_incluster_config",
]
