"""Who made a request: the user an authenticator found, and the anonymous user.

The names are Kubernetes' (k8s.io/apiserver ``authentication/user``): a request nobody could
authenticate is ``system:anonymous`` in ``system:unauthenticated``; every authenticated user is
also put in ``system:authenticated`` (apiserver's AuthenticatedGroupAdder).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "ALL_AUTHENTICATED",
    "ALL_UNAUTHENTICATED",
    "ANONYMOUS",
    "ANONYMOUS_USER",
    "UserInfo",
    "with_authenticated_group",
]

ANONYMOUS_USER = "system:anonymous"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ALL_AUTHENTICATED = "system:authenticated"

_NO_EXTRA: Mapping[str, tuple[str, ...]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated (or the anonymous) user, as TokenReview / SubjectAccessReview spell it."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: _NO_EXTRA, hash=False, compare=False
    )

    @property
    def is_anonymous(self) -> bool:
        return self.name == ANONYMOUS_USER


ANONYMOUS = UserInfo(name=ANONYMOUS_USER, groups=(ALL_UNAUTHENTICATED,))


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """``user`` with ``system:authenticated`` added (once), unless it is the anonymous user."""
    if user.is_anonymous or ALL_AUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, ALL_AUTHENTICATED), user.extra)
