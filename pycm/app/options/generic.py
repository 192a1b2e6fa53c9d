"""Generic options: informer resync and the API client's rate limits (KCM's generic flags)."""

from __future__ import annotations

from dataclasses import dataclass

from pycm.app.config import Config, GenericConfig
from pycm.app.options.flagset import BOOL, DURATION, FLOAT32, INT32, FlagSet

__all__ = ["GenericOptions"]

_D = GenericConfig()


@dataclass
class GenericOptions:
    min_resync_period: float = _D.min_resync_period
    kube_api_qps: float = _D.kube_api_qps
    kube_api_burst: int = _D.kube_api_burst
    use_service_account_credentials: bool = _D.use_service_account_credentials

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "min_resync_period",
            "min-resync-period",
            DURATION,
            "The resync period of the informers: each resyncs every period × (1 + a random "
            "fraction), so between it and twice it.",
        )
        fs.add(
            self,
            "kube_api_qps",
            "kube-api-qps",
            FLOAT32,
            "Sustained queries per second the manager's clients may send to the API server.",
        )
        fs.add(
            self,
            "kube_api_burst",
            "kube-api-burst",
            INT32,
            "Requests the manager's clients may send at once above --kube-api-qps.",
        )
        fs.add(
            self,
            "use_service_account_credentials",
            "use-service-account-credentials",
            BOOL,
            "Give each controller a client authenticated as its own service account in "
            "kube-system.",
        )

    def validate(self) -> list[str]:
        errors = []
        if self.kube_api_qps < 0:
            errors.append(f"--kube-api-qps {self.kube_api_qps:g} must not be negative")
        if self.kube_api_burst < 0:
            errors.append(f"--kube-api-burst {self.kube_api_burst} must not be negative")
        elif self.kube_api_burst == 0 and self.kube_api_qps > 0:
            # client-go's NewForConfig refuses this pair, so KCM does not start with it.
            errors.append(
                "--kube-api-burst must be greater than 0 when --kube-api-qps is greater than 0"
            )
        return errors

    def apply_to(self, config: Config) -> None:
        config.generic = GenericConfig(
            min_resync_period=self.min_resync_period,
            kube_api_qps=self.kube_api_qps,
            kube_api_burst=self.kube_api_burst,
            use_service_account_credentials=self.use_service_account_credentials,
        )
