"""``--feature-gates``: KCM's flag (component-base's featuregate behind a mapStringBool).

``--feature-gates=WatchListClient=false,StaleControllerConsistencyReplicaSet=true``; a repeated
flag merges (the later value of a gate wins). Refused as KCM refuses them, at parse time: a pair
without ``=`` ("malformed pair, expect string=bool"), a value that is not a Go bool, a gate pycm
does not know ("unrecognized feature gate: X" — pycm has only the gates whose behaviour it has,
:mod:`pycm.app.features`), a locked gate set against its lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pycm.app.config import Config, FeatureGatesConfig
from pycm.app.features import FEATURE_GATES, feature_gates_usage
from pycm.app.options.flagset import FlagSet, FlagType, FlagValueError

__all__ = ["FEATURE_GATES_FLAG", "FeatureGatesOptions", "gate_map"]

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


@dataclass
class FeatureGatesOptions:
    gates: list[str] = field(default_factory=list)  # "Name=bool" pairs in the order given

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(self, "gates", "feature-gates", FEATURE_GATES_FLAG, feature_gates_usage())

    def validate(self) -> list[str]:
        return []  # every pair was checked as it was parsed

    def apply_to(self, config: Config) -> None:
        enabled = {name: spec.default for name, spec in FEATURE_GATES.items()}
        enabled.update(gate_map(self.gates))
        config.feature_gates = FeatureGatesConfig(enabled)
