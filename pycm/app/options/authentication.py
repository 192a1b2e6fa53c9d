"""Authentication options for the secure endpoint: client certificates and TokenReview."""

from __future__ import annotations

from dataclasses import dataclass

from pycm.app.config import AuthenticationConfig, Config
from pycm.app.options.checks import kubeconfig_file, readable_file
from pycm.app.options.flagset import DURATION, STRING, FlagSet

__all__ = ["AuthenticationOptions"]

_D = AuthenticationConfig()


@dataclass
class AuthenticationOptions:
    kubeconfig: str = _D.kubeconfig
    client_ca_file: str = _D.client_ca_file
    token_webhook_cache_ttl: float = _D.token_webhook_cache_ttl

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "token_webhook_cache_ttl",
            "authentication-token-webhook-cache-ttl",
            DURATION,
            "The duration to cache responses from the webhook token authenticator.",
            secret=False,  # a duration, though its name has "token" in it
        )
        fs.add(
            self,
            "kubeconfig",
            "authentication-kubeconfig",
            STRING,
            "A kubeconfig for the API server that reviews bearer tokens (TokenReview); empty "
            "uses the main client configuration.",
        )
        fs.add(
            self,
            "client_ca_file",
            "client-ca-file",
            STRING,
            "Accept client certificates signed by a CA in this PEM bundle; the user is the "
            "certificate's common name.",
        )

    def validate(self) -> list[str]:
        errors = [
            kubeconfig_file("authentication-kubeconfig", self.kubeconfig),
            readable_file("client-ca-file", self.client_ca_file),
        ]
        return [e for e in errors if e]

    def apply_to(self, config: Config) -> None:
        config.authentication = AuthenticationConfig(
            kubeconfig=self.kubeconfig,
            client_ca_file=self.client_ca_file,
            token_webhook_cache_ttl=self.token_webhook_cache_ttl,
        )
