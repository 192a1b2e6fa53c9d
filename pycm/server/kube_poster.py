"""The delegating reviewers over a :class:`pycm.kube.Client`.

:class:`~pycm.server.tokenreview.ReviewPoster` is the one method the reviewers need; this
adapter is that method on pycm's API client: the review path names the resource constant
(``TOKENREVIEWS`` / ``SUBJECTACCESSREVIEWS``) and ``Client.create`` posts it — rate-limited,
instrumented and with the client's own errors, which the reviewers turn into
TokenReviewError / AuthorizationError. KCM uses its --authentication-kubeconfig /
--authorization-kubeconfig client for these; pycm's manager passes whichever client it built.
"""

from __future__ import annotations

from typing import Any

from pycm.kube.client import Client
from pycm.kube.resources import SUBJECTACCESSREVIEWS, TOKENREVIEWS, Resource
from pycm.server.subjectaccessreview import SUBJECTACCESSREVIEWS_PATH, DelegatingAuthorizer
from pycm.server.tokenreview import TOKENREVIEWS_PATH, DelegatingTokenReviewer

__all__ = ["ClientReviewPoster", "delegating_pair"]

_RESOURCES: dict[str, Resource] = {
    TOKENREVIEWS_PATH: TOKENREVIEWS,
    SUBJECTACCESSREVIEWS_PATH: SUBJECTACCESSREVIEWS,
}


class ClientReviewPoster:
    """A ReviewPoster that creates reviews through a pycm.kube Client."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def create(self, resource_path: str, body: dict[str, Any]) -> dict[str, Any]:
        resource = _RESOURCES.get(resource_path)
        if resource is None:
            raise ValueError(f"not a review resource: {resource_path}")
        return dict(await self._client.create(resource, body))


def delegating_pair(
    authentication_client: Client, authorization_client: Client | None = None
) -> tuple[DelegatingTokenReviewer, DelegatingAuthorizer]:
    """A TokenReview reviewer and a SubjectAccessReview authorizer with KCM's cache TTLs."""
    authn = ClientReviewPoster(authentication_client)
    authz = ClientReviewPoster(authorization_client or authentication_client)
    return DelegatingTokenReviewer(authn), DelegatingAuthorizer(authz)
