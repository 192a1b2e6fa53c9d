"""The manager's configuration: Config (built from the options) and CompletedConfig (what runs).

KCM's shape (cmd/kube-controller-manager/app/config): the option groups of
:mod:`pycm.app.options` validate themselves and then ``apply_to`` a :class:`Config`, which is
mutable only while it is being built; :meth:`Config.complete` turns it into the frozen
:class:`CompletedConfig` that the runner receives.

Every group is a plain frozen dataclass whose field defaults are KCM's defaults — the one place
they are written down (the options take their defaults from here). Values are typed: durations
are float seconds, lists are tuples, ports ints, and "" means "not given" for paths.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from pycm.app.features import BINARY_VERSION, FEATURE_GATES
from pycm.util.leasetiming import KUBE_DEFAULTS
from pycm.util.serving_limits import DEFAULT_LIMITS, ServingLimits

__all__ = [
    "AuthenticationConfig",
    "AuthorizationConfig",
    "CompletedConfig",
    "Config",
    "ControllersConfig",
    "DebuggingConfig",
    "DeploymentControllerConfig",
    "FeatureGatesConfig",
    "GenericConfig",
    "InsecureServingConfig",
    "LeaderElectionConfiguration",
    "LogsConfig",
    "MiscConfig",
    "ReplicaSetControllerConfig",
    "SecureServingConfig",
    "ShardingConfig",
    "TracingConfig",
    "default_identity",
]


@dataclass(frozen=True)
class GenericConfig:
    # Informer resync period base; each informer resyncs every min_resync_period * (1 + rand).
    min_resync_period: float = 12 * 3600.0
    kube_api_qps: float = 20.0
    kube_api_burst: int = 30
    # Each controller talks to the API server as its own service account in kube-system.
    use_service_account_credentials: bool = False


@dataclass(frozen=True)
class DebuggingConfig:
    # Hidden debugging faults (pycm run --debug-clock-rate / --debug-clock-offset): the
    # replica's injected clock runs at this rate × real time, its wall clock shifted by this
    # many seconds (pycm.util.clock.SkewedClock). 1 and 0: the real clock.
    clock_rate: float = 1.0
    clock_offset: float = 0.0


@dataclass(frozen=True)
class ControllersConfig:
    # The --controllers items as given ("*", "name", "-name"), in order.
    controllers: tuple[str, ...] = ("*",)
    # Start jitter: each controller waits up to 2 x this before it starts.
    controller_start_interval: float = 0.0
    # Canonical names the items enable (sorted), resolved against the known controllers.
    enabled: tuple[str, ...] = ()
    # A key one worker processes longer than this is marked stuck (queue.stuck); 0: never.
    stuck_worker_threshold: float = 60.0
    # A controller whose kind is not served waits for it (/readyz names it) instead of
    # stopping the manager at start-up.
    wait_for_resources: bool = False
    # The built-in controllers use a priority queue (--controller-priority-queue): initial-list
    # adds and resyncs wait behind fresh changes.
    priority_queue: bool = False


@dataclass(frozen=True)
class LeaderElectionConfiguration:
    """component-base's ``LeaderElectionConfiguration``: the manager's ``--leader-elect-*``
    settings (the elector's own config is :class:`pycm.leaderelection.LeaderElectionConfig`)."""

    leader_elect: bool = True
    lease_duration: float = KUBE_DEFAULTS.lease_duration
    renew_deadline: float = KUBE_DEFAULTS.renew_deadline
    retry_period: float = KUBE_DEFAULTS.retry_period
    resource_lock: str = "leases"
    resource_name: str = "pycm"
    resource_namespace: str = "kube-system"
    # The holder identity; "" until completion, which fills in hostname_<uuid> (KCM's rule).
    identity: str = ""
    # pycm's own (controller-runtime's EnableWarmup; KCM has none): informers run before leading.
    warm_standby: bool = False


@dataclass(frozen=True)
class ShardingConfig:
    """Sharded mode (``--sharded``, pycm's own): every replica runs the sharded controllers on
    its share of the namespaces (pycm.sharding); singletons still elect a leader."""

    sharded: bool = False
    ring: str = "pycm"
    # "": the leader election's rule (the pod's namespace in-cluster, else kube-system).
    lease_namespace: str = ""
    lease_duration: float = KUBE_DEFAULTS.lease_duration
    renew_deadline: float = KUBE_DEFAULTS.renew_deadline
    retry_period: float = KUBE_DEFAULTS.retry_period


@dataclass(frozen=True)
class DeploymentControllerConfig:
    concurrent_deployment_syncs: int = 5


@dataclass(frozen=True)
class ReplicaSetControllerConfig:
    concurrent_rs_syncs: int = 5


@dataclass(frozen=True)
class SecureServingConfig:
    bind_address: str = "0.0.0.0"
    port: int = 10257  # 0: no secure serving
    cert_dir: str = ""
    # Neither given: start-up generates a self-signed pair in memory (KCM's behaviour).
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    # Limits of the secure port and of --port, each (pycm.util.serving_limits: kube-apiserver's
    # ReadHeaderTimeout and IdleTimeout; the cap and handshake bound are pycm's).
    max_connections: int = DEFAULT_LIMITS.max_connections  # 0: no cap
    tls_handshake_timeout: float = DEFAULT_LIMITS.tls_handshake_timeout
    request_head_timeout: float = DEFAULT_LIMITS.read_header_timeout
    idle_connection_timeout: float = DEFAULT_LIMITS.idle_timeout
    tls_min_version: str = ""  # Go's name (VersionTLS12); "": TLS 1.2
    tls_cipher_suites: tuple[str, ...] = ()  # Go's names; (): OpenSSL's defaults

    @property
    def enabled(self) -> bool:
        return self.port != 0

    @property
    def limits(self) -> ServingLimits:
        return ServingLimits(
            max_connections=self.max_connections,
            tls_handshake_timeout=self.tls_handshake_timeout,
            read_header_timeout=self.request_head_timeout,
            idle_timeout=self.idle_connection_timeout,
        )


@dataclass(frozen=True)
class InsecureServingConfig:
    address: str = "127.0.0.1"
    port: int = 0  # 0: off (the default)

    @property
    def enabled(self) -> bool:
        return self.port != 0


@dataclass(frozen=True)
class AuthenticationConfig:
    kubeconfig: str = ""  # for TokenReview; "": the main client configuration
    client_ca_file: str = ""
    token_webhook_cache_ttl: float = 10.0  # a TokenReview's answer is kept this long


@dataclass(frozen=True)
class AuthorizationConfig:
    kubeconfig: str = ""  # for SubjectAccessReview; "": the main client configuration
    webhook_cache_authorized_ttl: float = 10.0  # an allowed SubjectAccessReview kept this long
    webhook_cache_unauthorized_ttl: float = 10.0  # a denied one
    # Exact paths (no prefixes) that skip authorization.
    always_allow_paths: tuple[str, ...] = ("/healthz", "/readyz", "/livez")


@dataclass(frozen=True)
class TracingConfig:
    trace_file: str = ""  # record every event as JSON lines here; "": no recording
    otlp_endpoint: str = ""  # "": no OpenTelemetry export
    otlp_protocol: str = "grpc"  # "grpc" or "http/protobuf"
    # Share of ordinary reconciles exported; failed and slow ones always are (tail sampling).
    sample_ratio: float = 0.1
    slow_threshold: float = 1.0
    # How long a sampled-out reconcile that wrote is held, in case a kept reconcile links to it
    # as its cause (pycm.otel.causes); 0: never held.
    cause_window: float = 5.0
    # Fold each object's history (``pycm why``, /debug/pycm/objects) in the state reducer.
    object_histories: bool = True


@dataclass(frozen=True)
class LogsConfig:
    verbosity: int = 0
    format: str = "text"  # "text" or "json"
    vmodule: tuple[tuple[str, int], ...] = ()  # (pattern, verbosity) rules, text format only
    flush_frequency: float = 5.0  # KCM's --log-flush-frequency (pycm writes lines at once)


@dataclass(frozen=True)
class MiscConfig:
    kubeconfig: str = ""  # "": in-cluster configuration (or --master alone)
    master: str = ""  # overrides the kubeconfig's server address
    config_file: str = ""  # the --config file the values were merged from, if any


def _gate_defaults() -> Mapping[str, bool]:
    return MappingProxyType({name: spec.default for name, spec in FEATURE_GATES.items()})


@dataclass(frozen=True)
class FeatureGatesConfig:
    """--feature-gates: the value of every gate pycm knows (:mod:`pycm.app.features`)."""

    gates: Mapping[str, bool] = field(default_factory=_gate_defaults)
    # --emulated-version (major, minor): what a LeaseCandidate publishes as emulationVersion.
    emulated_version: tuple[int, int] = BINARY_VERSION

    def enabled(self, name: str) -> bool:
        """The gate's value (KeyError for a gate pycm does not know: a programming error)."""
        return self.gates[name]


def default_identity() -> str:
    """KCM's elector identity: the host name, an underscore and a random UUID."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class Config:
    """The configuration under construction: the option groups' ``apply_to`` fill it in."""

    generic: GenericConfig = field(default_factory=GenericConfig)
    controllers: ControllersConfig = field(default_factory=ControllersConfig)
    leader_election: LeaderElectionConfiguration = field(
        default_factory=LeaderElectionConfiguration
    )
    sharding: ShardingConfig = field(default_factory=ShardingConfig)
    deployment_controller: DeploymentControllerConfig = field(
        default_factory=DeploymentControllerConfig
    )
    replicaset_controller: ReplicaSetControllerConfig = field(
        default_factory=ReplicaSetControllerConfig
    )
    secure_serving: SecureServingConfig = field(default_factory=SecureServingConfig)
    insecure_serving: InsecureServingConfig = field(default_factory=InsecureServingConfig)
    authentication: AuthenticationConfig = field(default_factory=AuthenticationConfig)
    authorization: AuthorizationConfig = field(default_factory=AuthorizationConfig)
    tracing: TracingConfig = field(default_factory=TracingConfig)
    logs: LogsConfig = field(default_factory=LogsConfig)
    misc: MiscConfig = field(default_factory=MiscConfig)
    debugging: DebuggingConfig = field(default_factory=DebuggingConfig)
    feature_gates: FeatureGatesConfig = field(default_factory=FeatureGatesConfig)
    # Flag name -> value (as printed) of every flag whose value is not its default; values of
    # secret flags withheld. What FlagsParsed reports.
    changed: dict[str, str] = field(default_factory=dict)
    # Every flag's value (given or default, as printed, redacted as `changed`): /flagz.
    flags: dict[str, str] = field(default_factory=dict)

    def complete(self, *, identity: str | None = None) -> CompletedConfig:
        """Fill in what is derived (an empty elector identity gets KCM's default) and freeze."""
        leader_election = self.leader_election
        if not leader_election.identity:
            leader_election = replace(leader_election, identity=identity or default_identity())
        return CompletedConfig(
            generic=self.generic,
            controllers=self.controllers,
            leader_election=leader_election,
            sharding=self.sharding,
            deployment_controller=self.deployment_controller,
            replicaset_controller=self.replicaset_controller,
            secure_serving=self.secure_serving,
            insecure_serving=self.insecure_serving,
            authentication=self.authentication,
            authorization=self.authorization,
            tracing=self.tracing,
            logs=self.logs,
            misc=self.misc,
            debugging=self.debugging,
            changed=MappingProxyType(dict(self.changed)),
            feature_gates=self.feature_gates,
            flags=MappingProxyType(dict(self.flags)),
        )


@dataclass(frozen=True)
class CompletedConfig:
    """Everything the manager needs to start, validated and completed; never changes."""

    generic: GenericConfig
    controllers: ControllersConfig
    leader_election: LeaderElectionConfiguration
    deployment_controller: DeploymentControllerConfig
    replicaset_controller: ReplicaSetControllerConfig
    secure_serving: SecureServingConfig
    insecure_serving: InsecureServingConfig
    authentication: AuthenticationConfig
    authorization: AuthorizationConfig
    tracing: TracingConfig
    logs: LogsConfig
    misc: MiscConfig
    debugging: DebuggingConfig
    changed: Mapping[str, str]  # a read-only view (see Config.changed)
    feature_gates: FeatureGatesConfig = field(default_factory=FeatureGatesConfig)
    flags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    sharding: ShardingConfig = field(default_factory=ShardingConfig)
