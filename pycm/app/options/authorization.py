"""Authorization options for the secure endpoint: SubjectAccessReview and the allow list."""

from __future__ import annotations

from dataclasses import dataclass, field

from pycm.app.config import AuthorizationConfig, Config
from pycm.app.options.checks import kubeconfig_file
from pycm.app.options.flagset import DURATION, STRING, STRINGS, FlagSet, go_quote

__all__ = ["AuthorizationOptions"]

_D = AuthorizationConfig()


@dataclass
class AuthorizationOptions:
    kubeconfig: str = _D.kubeconfig
    always_allow_paths: list[str] = field(default_factory=lambda: list(_D.always_allow_paths))
    webhook_cache_authorized_ttl: float = _D.webhook_cache_authorized_ttl
    webhook_cache_unauthorized_ttl: float = _D.webhook_cache_unauthorized_ttl

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "webhook_cache_authorized_ttl",
            "authorization-webhook-cache-authorized-ttl",
            DURATION,
            "The duration to cache 'authorized' responses from the webhook authorizer.",
        )
        fs.add(
            self,
            "webhook_cache_unauthorized_ttl",
            "authorization-webhook-cache-unauthorized-ttl",
            DURATION,
            "The duration to cache 'unauthorized' responses from the webhook authorizer.",
        )
        fs.add(
            self,
            "kubeconfig",
            "authorization-kubeconfig",
            STRING,
            "A kubeconfig for the API server that authorizes requests (SubjectAccessReview); "
            "empty uses the main client configuration.",
        )
        fs.add(
            self,
            "always_allow_paths",
            "authorization-always-allow-paths",
            STRINGS,
            "Paths served without authorization (exact matches, no prefixes).",
        )

    def validate(self) -> list[str]:
        errors = [
            f"--authorization-always-allow-paths: {go_quote(path)} must begin with /"
            for path in self.always_allow_paths
            if not path.startswith("/")
        ]
        unreadable = kubeconfig_file("authorization-kubeconfig", self.kubeconfig)
        if unreadable:
            errors.append(unreadable)
        return errors

    def apply_to(self, config: Config) -> None:
        config.authorization = AuthorizationConfig(
            kubeconfig=self.kubeconfig,
            always_allow_paths=tuple(self.always_allow_paths),
            webhook_cache_authorized_ttl=self.webhook_cache_authorized_ttl,
            webhook_cache_unauthorized_ttl=self.webhook_cache_unauthorized_ttl,
        )
