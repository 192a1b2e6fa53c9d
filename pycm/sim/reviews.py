"""TokenReview and SubjectAccessReview: create-only kinds answered, never stored."""

from __future__ import annotations

from typing import Any

from pycm.sim.auth import Attributes, Authorizer, TokenAuthenticator
from pycm.sim.objects import Obj, deep_copy

__all__ = ["subject_access_review", "token_review"]


def token_review(authenticator: TokenAuthenticator, body: Obj) -> Obj:
    review = deep_copy(body)
    review["apiVersion"], review["kind"] = "authentication.k8s.io/v1", "TokenReview"
    review.setdefault("metadata", {})
    token = str((review.get("spec") or {}).get("token") or "")
    user = authenticator.authenticate(token) if token else None
    status: dict[str, Any]
    if user is None:
        status = {"authenticated": False, "user": {}, "error": "invalid bearer token"}
    else:
        status = {"authenticated": True, "user": user.review_user()}
    audiences = (review.get("spec") or {}).get("audiences")
    if audiences and user is not None:
        status["audiences"] = audiences
    review["status"] = status
    return review


def subject_access_review(authorizer: Authorizer, body: Obj) -> Obj:
    review = deep_copy(body)
    review["apiVersion"], review["kind"] = "authorization.k8s.io/v1", "SubjectAccessReview"
    review.setdefault("metadata", {})
    spec = review.get("spec") or {}
    groups = tuple(str(g) for g in spec.get("groups") or [])
    user = str(spec.get("user") or "")
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if isinstance(resource, dict):
        attrs = Attributes(
            user=user,
            groups=groups,
            verb=str(resource.get("verb") or ""),
            resource_request=True,
            api_group=str(resource.get("group") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            namespace=str(resource.get("namespace") or ""),
            name=str(resource.get("name") or ""),
        )
    elif isinstance(non_resource, dict):
        attrs = Attributes(
            user=user,
            groups=groups,
            verb=str(non_resource.get("verb") or ""),
            resource_request=False,
            path=str(non_resource.get("path") or ""),
        )
    else:
        review["status"] = {
            "allowed": False,
            "evaluationError": "exactly one of resourceAttributes or nonResourceAttributes "
            "must be set",
        }
        return review
    decision = authorizer.authorize(attrs)
    review["status"] = {"allowed": decision.allowed, "reason": decision.reason}
    return review
