"""Authentication (bearer tokens) and authorization (a small rule policy).

**Tokens**: kube-apiserver's static token file (``--token-auth-file``), a CSV of
``token,user,uid,"group1,group2"``, plus the emulator's admin token (user ``admin``, group
``system:masters``), plus service-account tokens issued by TokenRequest
(:mod:`pycm.sim.serviceaccounts`), valid until they expire or their account is deleted. Every
authenticated user is also in ``system:authenticated``. Requests without a valid token get 401,
except ``/healthz``, ``/readyz``, ``/livez`` and ``/version`` (open, as kube's default RBAC
makes them).

**Policy** (``--authz-policy-file``, YAML or JSON)::

    rules:
      - users: [alice]            # and/or groups: [...]; "*" matches anyone
        verbs: [get, list, watch] # "*" for all
        apiGroups: [""]           # optional, default "*"
        resources: [pods, deployments/scale]   # "*", "pods/*" (all subresources)
        namespaces: [default]     # optional, default all
      - groups: [system:authenticated]
        verbs: [get]
        nonResourceURLs: [/api, /apis/*]       # "*" or a "/prefix/*"

Decisions: ``system:masters`` is always allowed. With a policy file, a request is allowed iff a
rule allows it, and the emulator enforces that on its own API (403 Forbidden). Without one,
every authenticated request to the emulator is allowed (a cluster where everyone is admin), but
a SubjectAccessReview answers ``allowed: true`` only for ``system:masters`` — delegated
authorization (a manager's /metrics) stays closed unless a policy opens it.
"""

from __future__ import annotations

import csv
import io
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "ADMIN_GROUP",
    "Attributes",
    "AuthError",
    "Authorizer",
    "Decision",
    "TokenAuthenticator",
    "UserInfo",
    "bearer_token",
]

ADMIN_GROUP = "system:masters"
AUTHENTICATED = "system:authenticated"


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header's value, or None."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


class AuthError(ValueError):
    """An unreadable or malformed token or policy file."""


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()

    def review_user(self) -> dict[str, Any]:
        return {"username": self.name, "uid": self.uid, "groups": list(self.groups)}


class TokenAuthenticator:
    """Static tokens (the admin's, a token file's) and bound ones (issued by a TokenRequest),
    which stop authenticating once their ``valid`` check fails (expired, account gone)."""

    def __init__(self) -> None:
        self._tokens: dict[str, UserInfo] = {}
        self._bound: dict[str, tuple[UserInfo, Callable[[], bool]]] = {}
        # The emulator's own admin tokens (add_admin): the only keys to its fault API.
        self._admin_tokens: set[str] = set()

    def add(self, token: str, user: UserInfo) -> None:
        groups = user.groups if AUTHENTICATED in user.groups else (*user.groups, AUTHENTICATED)
        self._tokens[token] = UserInfo(user.name, user.uid, groups)

    def add_admin(self, token: str | None = None) -> str:
        token = token or secrets.token_urlsafe(32)
        self.add(token, UserInfo("admin", "admin", (ADMIN_GROUP,)))
        self._admin_tokens.add(token)
        return token

    def is_admin_token(self, token: str) -> bool:
        """Whether ``token`` is one :meth:`add_admin` issued — not merely any token of a user
        in ``system:masters`` (a token file may give those to the clients under test)."""
        return token in self._admin_tokens

    def add_bound(self, token: str, user: UserInfo, valid: Callable[[], bool]) -> None:
        groups = user.groups if AUTHENTICATED in user.groups else (*user.groups, AUTHENTICATED)
        self._bound[token] = (UserInfo(user.name, user.uid, groups), valid)

    def authenticate(self, token: str) -> UserInfo | None:
        user = self._tokens.get(token)
        if user is not None:
            return user
        bound = self._bound.get(token)
        if bound is None:
            return None
        if not bound[1]():
            del self._bound[token]  # expired or its account is gone: never valid again
            return None
        return bound[0]

    def load_csv(self, text: str, source: str = "token file") -> None:
        for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                continue
            if len(row) < 3:
                raise AuthError(f"{source}: line {number}: want token,user,uid[,groups]")
            token, user, uid = (c.strip() for c in row[:3])
            groups = tuple(g.strip() for g in ",".join(row[3:]).split(",") if g.strip())
            if not token or not user:
                raise AuthError(f"{source}: line {number}: token and user must not be empty")
            self.add(token, UserInfo(user, uid, groups))

    def load_file(self, path: str | Path) -> None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            raise AuthError(f"cannot read token file {path}: {err.strerror or err}") from None
        self.load_csv(text, str(path))


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a request (or a SubjectAccessReview) asks to do."""

    user: str
    groups: tuple[str, ...]
    verb: str
    resource_request: bool
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str


def _listed(values: Sequence[str], value: str) -> bool:
    return "*" in values or value in values


def _path_matches(patterns: Sequence[str], path: str) -> bool:
    for pattern in patterns:
        if pattern == "*" or pattern == path:
            return True
        if pattern.endswith("*") and path.startswith(pattern[:-1]):
            return True
    return False


@dataclass(frozen=True, slots=True)
class Rule:
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ("*",)
    resources: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ("*",)
    non_resource_urls: tuple[str, ...] = ()

    def applies_to(self, attrs: Attributes) -> bool:
        return _listed(self.users, attrs.user) or any(_listed(self.groups, g) for g in attrs.groups)

    def allows(self, attrs: Attributes) -> bool:
        if not self.applies_to(attrs) or not _listed(self.verbs, attrs.verb):
            return False
        if not attrs.resource_request:
            return _path_matches(self.non_resource_urls, attrs.path)
        if not self.resources or not _listed(self.api_groups, attrs.api_group):
            return False
        if attrs.namespace and not _listed(self.namespaces, attrs.namespace):
            return False
        if not attrs.namespace and self.namespaces != ("*",):
            return False
        wanted = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        return any(
            r == "*"
            or r == wanted
            or (r.endswith("/*") and attrs.subresource and r[:-2] == attrs.resource)
            for r in self.resources
        )


def _strings(
    rule: Mapping[str, Any], key: str, where: str, default: Iterable[str] = ()
) -> tuple[str, ...]:
    value = rule.get(key)
    if value is None:
        return tuple(default)
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AuthError(f"{where}: {key} must be a list of strings")
    return tuple(value)


@dataclass
class Authorizer:
    rules: list[Rule] | None = None  # None: no policy configured
    source: str = field(default="")

    @property
    def has_policy(self) -> bool:
        return self.rules is not None

    @classmethod
    def from_text(cls, text: str, source: str = "policy file") -> Authorizer:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise AuthError(f"{source}: not YAML or JSON: {err}") from None
        if data is None:
            data = {"rules": []}
        if isinstance(data, list):
            data = {"rules": data}
        if not isinstance(data, dict) or not isinstance(data.get("rules", []), list):
            raise AuthError(f"{source}: want a mapping with a 'rules' list")
        rules = []
        for i, raw in enumerate(data.get("rules") or []):
            where = f"{source}: rules[{i}]"
            if not isinstance(raw, dict):
                raise AuthError(f"{where}: a rule must be a mapping")
            rule = Rule(
                users=_strings(raw, "users", where),
                groups=_strings(raw, "groups", where),
                verbs=_strings(raw, "verbs", where),
                api_groups=_strings(raw, "apiGroups", where, ("*",)),
                resources=_strings(raw, "resources", where),
                namespaces=_strings(raw, "namespaces", where, ("*",)),
                non_resource_urls=_strings(raw, "nonResourceURLs", where),
            )
            if not rule.users and not rule.groups:
                raise AuthError(f"{where}: a rule needs users or groups")
            if not rule.verbs:
                raise AuthError(f"{where}: a rule needs verbs")
            if not rule.resources and not rule.non_resource_urls:
                raise AuthError(f"{where}: a rule needs resources or nonResourceURLs")
            rules.append(rule)
        return cls(rules, source)

    @classmethod
    def from_file(cls, path: str | Path) -> Authorizer:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            raise AuthError(f"cannot read policy file {path}: {err.strerror or err}") from None
        return cls.from_text(text, str(path))

    def authorize(self, attrs: Attributes) -> Decision:
        """The policy's answer (for SubjectAccessReview)."""
        if ADMIN_GROUP in attrs.groups:
            return Decision(True, f"allowed: member of {ADMIN_GROUP}")
        if self.rules is None:
            return Decision(
                False, f"no authorization policy configured: only {ADMIN_GROUP} is allowed"
            )
        for index, rule in enumerate(self.rules):
            if rule.allows(attrs):
                return Decision(True, f"allowed by rule {index} of {self.source}")
        return Decision(False, "no rule allows it")

    def admit(self, attrs: Attributes) -> Decision:
        """The answer for a request to the emulator itself (open without a policy)."""
        if self.rules is None:
            return Decision(True, "no authorization policy configured")
        return self.authorize(attrs)
