"""Client configuration: where the API server is, how to trust it, who we are, how fast to go.

:func:`load_config` follows kube-controller-manager (``clientcmd.BuildConfigFromFlags``):

1. ``--kubeconfig`` (or, when it is not given, the ``KUBECONFIG`` environment variable — a
   ``:``-separated list merged as kubectl does) is loaded with the ``kubernetes`` package's
   loader, in the chosen ``context`` or the file's current one; ``--master`` then overrides the
   server it names.
2. With no kubeconfig but ``--master``: that server, with no credentials.
3. With neither: the in-cluster configuration (the service account's token and CA, and
   ``KUBERNETES_SERVICE_HOST`` / ``KUBERNETES_SERVICE_PORT``).
4. Otherwise :class:`ConfigError`. ``~/.kube/config`` is never read implicitly (KCM does not).

The loaders block (they read files and may run exec plugins), so they run in a thread.
Token files (a kubeconfig user's ``tokenFile``, the service-account token) are re-read by the
client every minute and after a 401, so rotated tokens are picked up (client-go's cached,
resettable file token source; see :mod:`pycm.kube.auth`).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import yaml

from pycm import __version__ as _pycm_version
from pycm.errors import PycmError

__all__ = [
    "DEFAULT_USER_AGENT",
    "SERVICE_ACCOUNT_DIR",
    "ClientConfig",
    "ConfigError",
    "TokenSource",
    "check_kubeconfig_file",
    "load_config",
    "load_incluster_config",
    "load_kubeconfig",
]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# client-go's shape: "<binary>/<version> (<os>/<arch>) <build>".
DEFAULT_USER_AGENT = (
    f"pycm/{_pycm_version} ({platform.system().lower()}/{platform.machine()}) "
    f"python/{platform.python_version()}"
)


class ConfigError(PycmError):
    """No usable client configuration: the message says which file, context or setting.

    Beside :class:`~pycm.kube.errors.KubeError`, not under it (see :mod:`pycm.errors`): a
    caller retrying failed requests must not retry a configuration that cannot work."""


class TokenSource(Protocol):
    """A bearer token that is fetched and refreshed on demand (client-go's cached, resettable
    token source): ``token()`` returns a current one, ``reset()`` drops the cached one after
    the server refused it (401), so the next request asks again."""

    async def token(self) -> str: ...

    def reset(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Everything a :class:`~pycm.kube.client.Client` needs. Secrets are never printed
    (``repr`` hides the token)."""

    server: str
    ca_data: bytes | None = None  # PEM
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    token: str | None = field(default=None, repr=False)  # bearer token, without "Bearer "
    token_file: str | None = None  # re-read periodically; wins over ``token`` when set
    # A blocking callable that returns the current Authorization header value (the kubernetes
    # package's refresh hook for exec plugins); called in a thread, at most once a minute.
    auth_refresh: Callable[[], str | None] | None = field(default=None, repr=False, compare=False)
    # An async token source (--use-service-account-credentials); wins over the other credentials.
    token_source: TokenSource | None = field(default=None, repr=False, compare=False)
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    qps: float = 20.0  # --kube-api-qps; negative disables client-side rate limiting
    burst: int = 30  # --kube-api-burst
    user_agent: str = DEFAULT_USER_AGENT
    timeout: float | None = 30.0  # per request (not watch streams); None: no timeout
    propagate_trace_context: bool = True  # send a W3C traceparent header inside trace steps
    # The traceparent's sampled flag (01) marks the requests of traces the manager exports by
    # ratio (pycm.util.sampling's rule, the OTel sink's --trace-sample-ratio); 0: the manager
    # exports nothing by ratio, so the flag is 00 and a parent-based apiserver records nothing.
    trace_sample_ratio: float = 0.0
    namespace: str = ""  # the context's (or the service account's) namespace, "" if unset
    # Loaded from the pod's service account (no kubeconfig, no --master): ``namespace`` is then
    # the pod's own, the default namespace of its Lease.
    in_cluster: bool = False

    def with_overrides(self, **changes: Any) -> ClientConfig:
        return replace(self, **changes)


async def load_config(
    kubeconfig: str | None = None,
    master: str | None = None,
    context: str | None = None,
    qps: float = 20.0,
    burst: int = 30,
    user_agent: str = "pycm",
    *,
    environ: Mapping[str, str] | None = None,
    service_account_dir: Path = SERVICE_ACCOUNT_DIR,
) -> ClientConfig:
    """Build the client configuration from KCM's flags (see the module docstring)."""
    env = os.environ if environ is None else environ
    tuning: dict[str, Any] = {"qps": qps, "burst": burst, "user_agent": _user_agent(user_agent)}
    source = kubeconfig or env.get("KUBECONFIG") or ""
    if source:
        config = await asyncio.to_thread(
            load_kubeconfig, source, context, explicit=bool(kubeconfig)
        )
        if master:
            config = replace(config, server=master.rstrip("/"))
        return replace(config, **tuning)
    if master:
        return ClientConfig(server=master.rstrip("/"), **tuning)
    try:
        config = await asyncio.to_thread(load_incluster_config, service_account_dir, env)
    except ConfigError as err:
        raise ConfigError(
            "no configuration: pass --kubeconfig or --master, set KUBECONFIG, "
            f"or run in a cluster (in-cluster: {err})"
        ) from None
    return replace(config, **tuning)


def _user_agent(name: str) -> str:
    """``pycm`` → the default agent; any other name is used as given (a controller's own)."""
    return DEFAULT_USER_AGENT if name == "pycm" else name


def load_kubeconfig(
    source: str, context: str | None = None, *, explicit: bool = True
) -> ClientConfig:
    """Load a kubeconfig (blocking). ``source`` may list several files separated by ``:``."""
    kc = _module("kubernetes.config.kube_config")
    Configuration = _module("kubernetes.client").Configuration
    ConfigException = _module("kubernetes.config.config_exception").ConfigException
    KubeConfigLoader, KubeConfigMerger = kc.KubeConfigLoader, kc.KubeConfigMerger

    paths = [p for p in source.split(os.pathsep) if p]
    existing = [p for p in paths if os.path.exists(os.path.expanduser(p))]
    missing = sorted(set(paths) - set(existing))
    if explicit and missing:
        raise ConfigError(f"kubeconfig file not found: {missing[0]}")
    if not existing:
        raise ConfigError(f"no kubeconfig file found at {source}")
    for path in existing:
        check_kubeconfig_file(path)
    try:
        merged = KubeConfigMerger(os.pathsep.join(existing)).config
    except (OSError, yaml.YAMLError, ConfigException, TypeError, KeyError, AttributeError) as e:
        raise ConfigError(f"invalid kubeconfig {source}: {_short(e)}") from None
    if merged is None:
        raise ConfigError(f"invalid kubeconfig {source}: no configuration found")
    contexts = [_raw(c).get("name") for c in _raw(merged).get("contexts") or []]
    chosen = context or _raw(merged).get("current-context") or ""
    if not chosen:
        raise ConfigError(f"kubeconfig {source} sets no current-context and none was chosen")
    if chosen not in contexts:
        known = ", ".join(contexts) or "none"
        raise ConfigError(
            f"context {chosen!r} not found in kubeconfig {source} (contexts: {known})"
        )

    conf = Configuration()
    try:
        loader = KubeConfigLoader(config_dict=merged, active_context=chosen, config_base_path=None)
        loader.load_and_set(conf)
    except (ConfigException, ValueError, TypeError, KeyError, AttributeError, OSError) as e:
        raise ConfigError(
            f"invalid kubeconfig {source} (context {chosen!r}): {_short(e)}"
        ) from None
    if not conf.host or conf.host == "http://localhost":
        ctx_cluster = _raw(loader.current_context["context"]).get("cluster", "")
        raise ConfigError(f"kubeconfig {source}: cluster {ctx_cluster!r} has no server")

    user, user_path = _context_user(merged, loader)
    token_file = user.get("tokenFile")
    if token_file:
        base = os.path.dirname(os.path.abspath(user_path or existing[0]))
        token_file = os.path.join(base, os.path.expanduser(str(token_file)))
    token = _bearer(conf.api_key.get("BearerToken"))
    refresh = None
    if "exec" in user and conf.refresh_api_key_hook is not None:
        hook = conf.refresh_api_key_hook

        def refresh() -> str | None:
            hook(conf)
            value = conf.api_key.get("BearerToken")
            return str(value) if value else None

    namespace = _raw(loader.current_context["context"]).get("namespace", "") or ""
    return ClientConfig(
        server=str(conf.host).rstrip("/"),
        ca_file=conf.ssl_ca_cert or None,
        cert_file=conf.cert_file or None,
        key_file=conf.key_file or None,
        token=None if token_file else token,
        token_file=token_file or None,
        auth_refresh=refresh,
        insecure_skip_tls_verify=not conf.verify_ssl,
        tls_server_name=getattr(conf, "tls_server_name", None) or None,
        namespace=str(namespace),
    )


def _module(name: str) -> Any:
    """The untyped kubernetes package, imported lazily (it is slow to import)."""
    return importlib.import_module(name)


def check_kubeconfig_file(path: str) -> None:
    """Read ``path`` and check it is a kubeconfig's shape (YAML mapping; clusters, contexts and
    users lists of named entries); :class:`ConfigError` with the reason otherwise."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid kubeconfig {path}: not YAML ({_short(e)})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read kubeconfig {path}: {_short(e)}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"invalid kubeconfig {path}: expected a mapping at the top level")
    for section in ("clusters", "contexts", "users"):
        items = doc.get(section)
        if items is not None and not (
            isinstance(items, list) and all(isinstance(i, dict) and "name" in i for i in items)
        ):
            raise ConfigError(
                f"invalid kubeconfig {path}: {section} must be a list of named entries"
            )


def _raw(node: Any) -> Any:
    """The plain value of one of the kubernetes loader's ConfigNodes (or a plain value)."""
    return node.value if hasattr(node, "value") else node


def _context_user(merged: Any, loader: Any) -> tuple[Mapping[str, Any], str]:
    """The current context's user entry and the file that defined it."""
    user_name = _raw(loader.current_context["context"]).get("user")
    for node in _raw(merged).get("users") or []:
        entry = _raw(node)
        if isinstance(entry, Mapping) and entry.get("name") == user_name:
            user = _raw(entry.get("user"))
            return (user if isinstance(user, Mapping) else {}), str(getattr(node, "path", "") or "")
    return {}, ""


def _bearer(value: Any) -> str | None:
    if not value:
        return None
    text = str(value)
    return text[7:] if text.lower().startswith("bearer ") else text


def _short(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:200]


def load_incluster_config(
    service_account_dir: Path = SERVICE_ACCOUNT_DIR, environ: Mapping[str, str] | None = None
) -> ClientConfig:
    """The in-cluster configuration (blocking): the kubernetes package's InClusterConfigLoader
    validates the environment and files; the token file is kept for rotation."""
    Configuration = _module("kubernetes.client").Configuration
    ConfigException = _module("kubernetes.config.config_exception").ConfigException
    InClusterConfigLoader = _module("kubernetes.config.incluster_config").InClusterConfigLoader

    env = dict(os.environ if environ is None else environ)
    token_path = service_account_dir / "token"
    ca_path = service_account_dir / "ca.crt"
    conf = Configuration()
    try:
        InClusterConfigLoader(
            token_filename=str(token_path),
            cert_filename=str(ca_path),
            try_refresh_token=False,
            environ=env,
        ).load_and_set(conf)
    except ConfigException as e:
        raise ConfigError(str(e)) from None
    namespace_path = service_account_dir / "namespace"
    namespace = namespace_path.read_text().strip() if namespace_path.is_file() else ""
    return ClientConfig(
        server=str(conf.host),
        ca_file=str(ca_path),
        token_file=str(token_path),
        namespace=namespace,
        in_cluster=True,
    )
