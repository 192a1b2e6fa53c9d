"""coordination.k8s.io/v1beta1 LeaseCandidate (kube's ``pkg/registry/coordination/
leasecandidate``, ``ValidateLeaseCandidate``; KEP-4355, beta since 1.33).

A candidate for a Lease publishes one: the Lease it contends for (``spec.leaseName``,
immutable), its ``binaryVersion`` and ``emulationVersion`` (semantic versions without a leading
``v``; the emulation version at most the binary's) and the ``strategy`` it wants the
coordinator to use (``OldestEmulationVersion``, or a ``vendor/name`` one the coordinator leaves
alone). ``pingTime`` is written by the coordinator (:mod:`pycm.sim.leader_coordinator`) to ask
for a ``renewTime``; neither is validated (they are MicroTimes).

The name is a ConfigMap key (kube's ``IsConfigMapKey``), not a DNS subdomain: candidates are
named by their elector identity, ``hostname_uuid``. :class:`Semver` is the version arithmetic
the validation and the coordinator share (blang/semver's strict ``Parse`` and ``ParseTolerant``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pycm.sim import validation
from pycm.sim.errors import Cause
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import Printer, age, col, name_of, spec_of

__all__ = [
    "OLDEST_EMULATION_VERSION",
    "STRATEGY",
    "LeaseCandidateStrategy",
    "Semver",
    "strategy_causes",
]

OLDEST_EMULATION_VERSION = "OldestEmulationVersion"
"""The one strategy kube defines (a ``vendor/name`` strategy is left to another controller)."""

_VALID_STRATEGIES = (OLDEST_EMULATION_VERSION,)
_NAME_MAX = 253
# A qualified name's parts (kube's IsQualifiedName): an optional DNS-subdomain prefix and a
# name of at most 63 characters.
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_NUMERIC = re.compile(r"^(0|[1-9][0-9]*)$")
_IDENTIFIER = re.compile(r"^[0-9A-Za-z-]+$")


@dataclass(frozen=True, slots=True)
class Semver:
    """A semantic version, ordered as semver 2.0 orders them (a pre-release sorts before its
    release; build metadata is ignored)."""

    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Semver | None:
        """Strict: ``MAJOR.MINOR.PATCH[-pre][+build]``, no leading zeros (blang's Parse)."""
        core, _, _build = text.partition("+")
        core, dash, pre_text = core.partition("-")
        parts = core.split(".")
        if len(parts) != 3 or not all(_NUMERIC.match(p) for p in parts):
            return None
        pre: tuple[str, ...] = ()
        if dash:
            pre = tuple(pre_text.split("."))
            for ident in pre:
                if not _IDENTIFIER.match(ident):
                    return None
                if ident.isdigit() and not _NUMERIC.match(ident):
                    return None  # a numeric pre-release identifier has no leading zero
        if _build and not all(_IDENTIFIER.match(b) for b in _build.split(".")):
            return None
        return cls(int(parts[0]), int(parts[1]), int(parts[2]), pre)

    @classmethod
    def parse_tolerant(cls, text: str) -> Semver | None:
        """Tolerant (blang's ParseTolerant): a leading ``v`` and surrounding spaces are
        dropped, a missing minor or patch is 0, leading zeros are ignored."""
        text = text.strip().removeprefix("v")
        core, sep, rest = text.partition("-") if "-" in text else text.partition("+")
        parts = core.split(".")
        if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
            return None
        parts = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
        return cls.parse(".".join(parts) + (sep + rest if sep else ""))

    def _key(self) -> tuple[Any, ...]:
        # No pre-release sorts after any pre-release; identifiers compare numerically when
        # numeric, numbers before words, and a shorter list first when one is a prefix.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, not self.pre, pre)

    def compare(self, other: Semver) -> int:
        a, b = self._key(), other._key()
        return (a > b) - (a < b)

    def __str__(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return core + ("-" + ".".join(self.pre) if self.pre else "")


def strategy_causes(strategy: str, parent: str) -> list[Cause]:
    """kube's ValidateCoordinatedLeaseStrategy: a bare name must be one kube defines; a
    ``prefix/name`` must be a qualified name. ``parent`` is the path kube hands it (already
    ``spec.strategy``): kube names the field ``spec.strategy.strategy``, and so does this."""
    field = f"{parent}.strategy"
    if "/" not in strategy:
        if strategy not in _VALID_STRATEGIES:
            return [validation.not_supported(field, strategy, _VALID_STRATEGIES)]
        return []
    prefix, _, name = strategy.partition("/")
    causes: list[Cause] = []
    if not name:
        return [validation.invalid_value(field, strategy, "name part must be non-empty")]
    if strategy.count("/") > 1:
        return [
            validation.invalid_value(
                field,
                strategy,
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                "'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
                "prefix and '/' (e.g. 'example.com/MyName')",
            )
        ]
    if not prefix or not _DNS_SUBDOMAIN.match(prefix) or len(prefix) > _NAME_MAX:
        causes.append(
            validation.invalid_value(
                field,
                strategy,
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            )
        )
    if len(name) > 63:
        causes.append(
            validation.invalid_value(field, strategy, "name part must be no more than 63 bytes")
        )
    if not _QUALIFIED_NAME.match(name):
        causes.append(
            validation.invalid_value(
                field,
                strategy,
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                "or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            )
        )
    return causes


def _name_causes(obj: Obj) -> list[Cause]:
    """metadata as ValidateObjectMeta with kube's ValidLeaseCandidateName (a ConfigMap key)."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    # The generic metadata rules (labels, annotations) on a stand-in name: only the name's
    # rule differs from other kinds'.
    causes = validation.metadata_causes({"metadata": {**meta, "name": "x"}}, False)
    if not name:
        return [validation.required("metadata.name"), *causes]
    if not isinstance(name, str):
        why = "must be a string"
    elif len(name) > _NAME_MAX:
        why = "must be no more than 253 characters"
    elif name in (".", ".."):
        why = f"must not be '{name}'"
    elif not _CONFIG_KEY.match(name):
        why = (
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
            "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
            "'[-._a-zA-Z0-9]+')"
        )
    else:
        return causes
    return [validation.invalid_value("metadata.name", str(name), why), *causes]


def _version(spec: dict[str, Any], key: str, causes: list[Cause]) -> Semver | None:
    text = spec.get(key) or ""
    if not text:
        return None
    version = Semver.parse(str(text))
    if version is None:
        causes.append(
            validation.invalid_value(f"spec.{key}", str(text), "must be a valid semantic version")
        )
    return version


def _spec_causes(spec: Any) -> list[Cause]:
    if not isinstance(spec, dict):
        spec = {}
    causes: list[Cause] = []
    if not spec.get("leaseName"):
        causes.append(validation.required("spec.leaseName"))
    emulation = _version(spec, "emulationVersion", causes)
    if not spec.get("binaryVersion"):
        causes.append(validation.required("spec.binaryVersion"))
        binary = None
    else:
        binary = _version(spec, "binaryVersion", causes)
    if (
        spec.get("binaryVersion")
        and spec.get("emulationVersion")
        and (binary or Semver(0, 0, 0)).compare(emulation or Semver(0, 0, 0)) < 0
    ):
        causes.append(
            validation.invalid_value(
                "spec.binaryVersion",
                str(spec["binaryVersion"]),
                "must be greater than or equal to `emulationVersion`",
            )
        )
    strategy = spec.get("strategy") or ""
    if not strategy:
        causes.append(validation.required("spec.strategy"))
    else:
        if strategy == OLDEST_EMULATION_VERSION and emulation is None:
            causes.append(
                {
                    **validation.required("spec.emulationVersion"),
                    "message": "Required value: must be specified when `strategy` is "
                    "'OldestEmulationVersion'",
                }
            )
        causes += strategy_causes(str(strategy), "spec.strategy")
    return causes


def _cells(obj: Obj, now: float) -> list[Any]:
    spec = spec_of(obj)
    return [
        name_of(obj),
        spec.get("leaseName") or "",
        spec.get("binaryVersion") or "",
        spec.get("emulationVersion") or "",
        age(obj, now),
    ]


class LeaseCandidateStrategy(Strategy):
    """Validation only: no status, no generation (kube's strategy for the kind)."""

    def validate(self, obj: Obj) -> list[Cause]:
        return _name_causes(obj) + _spec_causes(obj.get("spec"))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        return causes + validation.immutable(
            "spec.leaseName",
            (new.get("spec") or {}).get("leaseName", ""),
            (old.get("spec") or {}).get("leaseName", ""),
        )


STRATEGY = LeaseCandidateStrategy(
    "LeaseCandidate",
    Printer(
        [
            col("Name", fmt="name"),
            col("LeaseName"),
            col("BinaryVersion"),
            col("EmulationVersion"),
            col("Age"),
        ],
        _cells,
    ),
)
