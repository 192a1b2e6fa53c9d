"""KCM 1.36's flags that pycm does not have, in the sections pycm has (and the few sections it
does not that a KCM manifest commonly sets): each is refused with one line, "pycm does not
support --X: why" — never silently ignored, and never an "unknown flag" that leaves a user
guessing whether pycm knows it.

Each is parsed as KCM types it (a bool takes no value, so ``--profiling`` alone is one flag,
not a flag and a stray argument) and hidden from help and from "did you mean"; its value never
reaches /configz or /flagz. A flag whose setting pycm already honours is accepted with that
value only: ``--profiling=false`` (pycm serves no profiler, which is what it asks for; the CIS
benchmark sets it) passes, ``--profiling`` is refused. docs/operations.md lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pycm.app.config import Config
from pycm.app.options.flagset import BOOL, STRING, FlagSet

__all__ = ["REFUSED", "Refusal", "RefusedFlagsOptions"]


@dataclass(frozen=True)
class Refusal:
    section: str  # KCM's help section (pycm's title when pycm has the section)
    why: str
    bool_flag: bool = False
    accepts: str | None = None  # the one value pycm honours (a bool's "true"/"false")


_CLOUD = "pycm runs no cloud, node-IPAM or route controller"
_REQUESTHEADER = (
    "pycm authenticates no front proxy (request headers); use a bearer token or --client-ca-file"
)
_LOOKUP = (
    "pycm does not read the extension-apiserver-authentication ConfigMap; give --client-ca-file"
)
_METRICS = "pycm's /metrics has no metric filtering"
_SPLIT = "pycm writes every log line to stderr"
_BUFFER = "pycm writes every log line at once (no buffered info stream)"

REFUSED: Final[dict[str, Refusal]] = {
    # Generic
    "allocate-node-cidrs": Refusal("Generic", _CLOUD, bool_flag=True, accepts="false"),
    "cidr-allocator-type": Refusal("Generic", _CLOUD),
    "cloud-config": Refusal("Generic", _CLOUD),
    "cloud-provider": Refusal("Generic", _CLOUD),
    "cluster-cidr": Refusal("Generic", _CLOUD),
    "cluster-name": Refusal("Generic", "pycm names no cloud resources after a cluster"),
    "configure-cloud-routes": Refusal("Generic", _CLOUD, bool_flag=True, accepts="false"),
    "external-cloud-volume-plugin": Refusal("Generic", _CLOUD),
    "node-monitor-period": Refusal("Generic", "pycm runs no node lifecycle controller"),
    "route-reconciliation-period": Refusal("Generic", _CLOUD),
    "kube-api-content-type": Refusal(
        "Generic", "pycm speaks JSON only (not protobuf, KCM's default)", accepts="application/json"
    ),
    # Leader migration
    "enable-leader-migration": Refusal(
        "Leader election",
        "pycm has no leader migration (there is no cloud-controller-manager to migrate to)",
        bool_flag=True,
        accepts="false",
    ),
    "leader-migration-config": Refusal("Leader election", "pycm has no leader migration"),
    # Debugging
    "profiling": Refusal(
        "Debugging", "pycm serves no Go pprof (see /debug/pycm/*)", bool_flag=True, accepts="false"
    ),
    "contention-profiling": Refusal(
        "Debugging", "pycm serves no Go pprof", bool_flag=True, accepts="false"
    ),
    # Secure serving
    "disable-http2-serving": Refusal(
        "Secure serving", "pycm serves HTTP/1.1 only", bool_flag=True, accepts="true"
    ),
    "http2-max-streams-per-connection": Refusal(
        "Secure serving", "pycm serves HTTP/1.1 only", accepts="0"
    ),
    "permit-address-sharing": Refusal(
        "Secure serving",
        "pycm binds with SO_REUSEADDR always (as Go does on Linux), not as KCM's flag asks",
        bool_flag=True,
        accepts="false",
    ),
    "permit-port-sharing": Refusal(
        "Secure serving",
        "pycm does not bind with SO_REUSEPORT",
        bool_flag=True,
        accepts="false",
    ),
    "tls-sni-cert-key": Refusal("Secure serving", "pycm serves one certificate (no SNI)"),
    # Authentication
    "authentication-skip-lookup": Refusal(
        "Authentication", _LOOKUP, bool_flag=True, accepts="true"
    ),
    "authentication-tolerate-lookup-failure": Refusal("Authentication", _LOOKUP, bool_flag=True),
    "requestheader-allowed-names": Refusal("Authentication", _REQUESTHEADER),
    "requestheader-client-ca-file": Refusal("Authentication", _REQUESTHEADER),
    "requestheader-extra-headers-prefix": Refusal("Authentication", _REQUESTHEADER),
    "requestheader-group-headers": Refusal("Authentication", _REQUESTHEADER),
    "requestheader-uid-headers": Refusal("Authentication", _REQUESTHEADER),
    "requestheader-username-headers": Refusal("Authentication", _REQUESTHEADER),
    # Metrics
    "allow-metric-labels": Refusal("Metrics", _METRICS),
    "allow-metric-labels-manifest": Refusal("Metrics", _METRICS),
    "disable-metrics": Refusal("Metrics", _METRICS),
    "show-hidden-metrics-for-version": Refusal("Metrics", "pycm hides no deprecated metrics"),
    # Logs
    "log-json-info-buffer-size": Refusal("Logs", _BUFFER),
    "log-json-split-stream": Refusal("Logs", _SPLIT, bool_flag=True, accepts="false"),
    "log-text-info-buffer-size": Refusal("Logs", _BUFFER),
    "log-text-split-stream": Refusal("Logs", _SPLIT, bool_flag=True, accepts="false"),
}
"""Every KCM flag pycm refuses, by name."""


def _bool_text(value: bool) -> str:
    return "true" if value else "false"


@dataclass
class RefusedFlagsOptions:
    """The refused flags' values as given (None: not given)."""

    given: dict[str, str] = field(default_factory=dict)

    def add_flags(self, fs: FlagSet) -> None:
        for name, refusal in REFUSED.items():
            holder = _Holder(self.given, name, refusal.bool_flag)
            fs.add(
                holder,
                "value",
                name,
                BOOL if refusal.bool_flag else STRING,
                refusal.why,
                hidden=True,
                secret=False,
            )

    def validate(self) -> list[str]:
        errors = []
        for name in sorted(self.given):
            refusal = REFUSED[name]
            if refusal.accepts is not None and self.given[name] == refusal.accepts:
                continue
            errors.append(f"pycm does not support --{name}: {refusal.why}")
        return errors

    def apply_to(self, config: Config) -> None:
        pass  # nothing reaches the configuration


class _Holder:
    """One refused flag's slot: setting it records the value, as text, in ``given``."""

    def __init__(self, given: dict[str, str], name: str, is_bool: bool) -> None:
        self._given = given
        self._name = name
        self._is_bool = is_bool

    @property
    def value(self) -> bool | str:
        text = self._given.get(self._name, "")
        return text == "true" if self._is_bool else text

    @value.setter
    def value(self, value: bool | str) -> None:
        self._given[self._name] = _bool_text(value) if isinstance(value, bool) else value
