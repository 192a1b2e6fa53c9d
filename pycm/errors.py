"""pycm's exception tree: what a caller of pycm's libraries can catch, by type.

Every error the manager's libraries raise about the outside world (the API server, the client
configuration, the lock object) derives from :class:`PycmError`; callers catch the narrowest
type they handle, never test for attributes (``code``, ``status``) to guess what an exception
is. The tree, with the module each class lives in::

    Exception
     └── PycmError                     pycm.errors: the root
          ├── KubeError                 pycm.kube.errors: a request failed
          │    ├── ApiError             the server answered with an error Status (code, reason,
          │    │    │                   message, details, retry_after, status)
          │    │    ├── BadRequest       400
          │    │    ├── Unauthorized     401
          │    │    ├── Forbidden        403
          │    │    ├── NotFound         404
          │    │    ├── MethodNotAllowed 405
          │    │    ├── AlreadyExists    409, reason AlreadyExists
          │    │    ├── Conflict         409 (a resourceVersion conflict)
          │    │    ├── Expired          410 / reason Expired or Gone (``Gone`` is the same class)
          │    │    ├── Invalid          422 (``causes``)
          │    │    ├── TooManyRequests  429
          │    │    ├── Timeout          504 / reason Timeout / a client-side timeout (code 0)
          │    │    ├── ServerError      any other 5xx
          │    │    └── StatusError      a Status met outside the HTTP pipeline (a watch ERROR
          │    │                         event the informers decode themselves, a test double's
          │    │                         scripted failure), typed by its code and reason only
          │    ├── TransportError       no answer: connection refused or reset, protocol error
          │    └── FencedError          a write refused unsent: the lease renew is too old
          ├── ConfigError               pycm.kube.config: no usable client configuration
          ├── NoKindMatchError          pycm.kube.restmapper: no served resource has the kind
          │                             (also a LookupError)
          └── LockError                 pycm.leaderelection.resourcelock: a lock operation failed
               ├── LockNotFound         the lock object does not exist yet
               └── LockConflict         an update or create lost an optimistic race (409)

:class:`~pycm.kube.config.ConfigError` is beside :class:`~pycm.kube.errors.KubeError`, not
under it, as httpx keeps ``InvalidURL`` beside ``HTTPError``: a caller that retries failed
requests (``except KubeError``: the lease watch, the service-account checks) must not retry a
configuration that cannot work, whether it is met at start-up or when a token file is re-read.

Rightly local, and why (each stays a plain ``Exception`` or ``ValueError``):

- **Bad arguments** (``ValueError`` subclasses: ``SelectorError``, ``ShardSelectorError``,
  ``DurationError``, ``FlagValueError``, ``RegistryError``, ``LeaderElectionError``,
  ``CodecError``, ``CredentialsError``, ``RefError``, ``IndexerError``, ``KeyError_``,
  ``AlreadyOwnedError``): a value the caller passed is wrong (a flag, a selector, a duration,
  an index name, an object without a name); callers catch ``ValueError`` for those as for any
  bad argument, and the option groups turn them into usage errors with their message.
- **Signals between a module and its own caller** (``ShutDown``, ``StaleCache``,
  ``AdoptionRefused``, ``Unknown``, ``CheckFailed``, and the private ``_NoWatchList``,
  ``_NoEventYet``, ``_Restarted``, ``_ConfigError``, ``_Timeout``, ``_BadInput``, ``_Mismatch``,
  ``_Refused``): control flow that never leaves the caller that expects it.
- **Raised by a user to pycm**: ``TerminalError`` (pycm.controller.reconcile) is the reconcile
  contract's "do not retry", raised by a controller's sync, not a failure pycm reports.
- **Turned into an HTTP answer where it is raised**: the serving chain's
  ``AuthenticationError``, ``AuthorizationError``, ``TokenReviewError`` become 401/403 in one
  middleware; ``FramingError`` (pycm.kube.chunked) becomes httpx's ``RemoteProtocolError``,
  hence a :class:`~pycm.kube.errors.TransportError`.
- **The emulator's** (pycm.sim: ``APIError``, ``EmulatorError``, ``ServingError``, ``AuthError``,
  the CEL, JSONPath, regex and base64 parsers' errors): the emulator stands for the cluster and
  imports nothing of the manager; its errors are Status answers on the wire.
- **A process's one-line stop reason** (``ManagerError``, ``DemoError``, ``ClusterError``): the
  command that started the process prints it and exits; nothing catches it as a library error.
"""

from __future__ import annotations

__all__ = ["PycmError"]


class PycmError(Exception):
    """The root of the errors pycm's libraries raise about the world outside the process (see
    the module's tree)."""
