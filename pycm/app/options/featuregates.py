"""``--feature-gates`` and ``--emulated-version``: KCM's compatibility flags (component-base's
featuregate behind a mapStringBool, and the version the component emulates).

``--feature-gates=WatchListClient=false,StaleControllerConsistencyReplicaSet=true``; a repeated
flag merges (the later value of a gate wins). Refused as KCM refuses them, at parse time: a pair
without ``=`` ("malformed pair, expect string=bool"), a value that is not a Go bool, a gate pycm
does not know ("unrecognized feature gate: X" — pycm has only the gates whose behaviour it has,
:mod:`pycm.app.features`), a locked gate set against its lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pycm.app.config import Config, FeatureGatesConfig
from pycm.app.features import (
    BINARY_VERSION,
    FEATURE_GATES,
    MIN_EMULATED_VERSION,
    feature_gate_conflicts,
    feature_gates_usage,
)
from pycm.app.options.flagset import FlagSet, FlagType, FlagValueError

__all__ = ["EMULATED_VERSION_FLAG", "FEATURE_GATES_FLAG", "FeatureGatesOptions", "gate_map"]

_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True}
_BOOLS |= {"0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def _parse(text: str) -> list[str]:
    """The pairs of one flag value, each checked, as ``Name=true|false`` (Go's bool spellings
    normalised); an empty value sets nothing."""
    pairs = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, eq, value = item.partition("=")
        if not eq:
            raise FlagValueError(f"malformed pair, expect string=bool: {item}")
        name = name.strip()
        if value.strip() not in _BOOLS:
            raise FlagValueError(
                f'invalid value of {name}={value}, err: strconv.ParseBool: parsing "{value}": '
                "invalid syntax"
            )
        enabled = _BOOLS[value.strip()]
        spec = FEATURE_GATES.get(name)
        if spec is None:
            raise FlagValueError(f"unrecognized feature gate: {name}")
        if spec.locked and enabled != spec.default:
            raise FlagValueError(
                f"cannot set feature gate {name} to {str(enabled).lower()}, feature is locked "
                f"to {str(spec.default).lower()}"
            )
        pairs.append(f"{name}={str(enabled).lower()}")
    return pairs


def gate_map(pairs: list[str]) -> dict[str, bool]:
    """The gates ``pairs`` set (the last pair of a gate wins)."""
    out: dict[str, bool] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        out[name] = value == "true"
    return out


def _format(pairs: list[str]) -> str:
    return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gate_map(pairs).items()))


FEATURE_GATES_FLAG = FlagType("mapStringBool", _parse, _format, "", accumulates=True)


def _show(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def _parse_emulated(text: str) -> tuple[int, int]:
    """``1.35`` or ``kube=1.35`` (component-base's form: a component, then major.minor); pycm
    is one component, KCM's "kube"."""
    component, eq, value = text.strip().rpartition("=")
    if eq and component.strip() != "kube":
        raise FlagValueError(f"component not registered: {component.strip()}")
    parts = value.strip().removeprefix("v").split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise FlagValueError(f"illegal version string {value.strip()!r}: want major.minor")
    version = (int(parts[0]), int(parts[1]))
    if not MIN_EMULATED_VERSION <= version <= BINARY_VERSION:
        raise FlagValueError(
            f"emulation version {_show(version)} is not between "
            f"[{_show(MIN_EMULATED_VERSION)}, {_show(BINARY_VERSION)}.0]"
        )
    return version


EMULATED_VERSION_FLAG = FlagType(
    "mapStringString",
    _parse_emulated,
    lambda v: f"kube={_show(v)}",
    f"kube={_show(BINARY_VERSION)}",
)


@dataclass
class FeatureGatesOptions:
    gates: list[str] = field(default_factory=list)  # "Name=bool" pairs in the order given
    emulated_version: tuple[int, int] = BINARY_VERSION

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(self, "gates", "feature-gates", FEATURE_GATES_FLAG, feature_gates_usage())
        fs.add(
            self,
            "emulated_version",
            "emulated-version",
            EMULATED_VERSION_FLAG,
            "The version the component emulates (major.minor, optionally as kube=major.minor). "
            "In pycm it is the emulation version its LeaseCandidate publishes "
            "(--feature-gates=CoordinatedLeaderElection=true); feature gate defaults stay "
            f"{_show(BINARY_VERSION)}'s. Options are: kube={_show(MIN_EMULATED_VERSION)}.."
            f"{_show(BINARY_VERSION)}; {_show(BINARY_VERSION)} when not given.",
        )

    def validate(self) -> list[str]:
        # Every pair was checked as it was parsed; what is left is gates that need another.
        return feature_gate_conflicts(gate_map(self.gates))

    def apply_to(self, config: Config) -> None:
        enabled = {name: spec.default for name, spec in FEATURE_GATES.items()}
        enabled.update(gate_map(self.gates))
        config.feature_gates = FeatureGatesConfig(enabled, emulated_version=self.emulated_version)
