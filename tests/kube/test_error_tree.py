"""pycm's one exception tree (pycm.errors): the errors callers catch sit under PycmError, the
cache's StatusError is one of the client's API errors, and the callers that sort errors do it
by type."""

from __future__ import annotations

import pytest

from pycm.cache.listwatch import StatusError as CacheStatusError
from pycm.cache.reflector import is_expired, is_too_many_requests
from pycm.controller.outcomes import is_api_error as _is_api_error
from pycm.errors import PycmError
from pycm.kube import ApiError, ConfigError, FencedError, KubeError, NotFound, TransportError
from pycm.kube.errors import StatusError, error_from_status
from pycm.kube.restmapper import NoKindMatchError
from pycm.leaderelection.resourcelock import LockConflict, LockError, LockNotFound, _lock_error


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(NotFound("gone", code=404), id="api"),
        pytest.param(TransportError("ConnectError: refused"), id="transport"),
        pytest.param(FencedError("update", "pods", None, 10.0), id="fenced"),
        pytest.param(ConfigError("no kubeconfig"), id="config"),
        pytest.param(NoKindMatchError("apps", "v1", kind="Nope"), id="no-kind"),
        pytest.param(LockError("lock failed"), id="lock"),
        pytest.param(StatusError(500, "InternalError", "boom"), id="status"),
    ],
)
def test_error_tree_library_errors_are_pycm_errors(error: Exception) -> None:
    assert isinstance(error, PycmError)


def test_error_tree_config_error_is_beside_kube_error_not_under_it() -> None:
    assert not isinstance(ConfigError("x"), KubeError)
    assert isinstance(NoKindMatchError("", "v1", kind="X"), LookupError)


def test_error_tree_status_error_is_the_clients_api_error_with_its_own_message() -> None:
    assert CacheStatusError is StatusError
    error = StatusError.from_status({"code": 410, "reason": "Expired", "message": "too old"})
    assert isinstance(error, ApiError)
    assert (error.code, error.reason, error.message) == (410, "Expired", "too old")
    assert str(error) == "410 Expired: too old"
    assert str(StatusError(500, message="boom")) == "500: boom"
    assert error.status == {"code": 410, "reason": "Expired", "message": "too old"}


class _CodeCarrier(Exception):
    """Not an API error, though it has a ``code``: sorted by type, it is none."""

    code = 410
    reason = "TooManyRequests"


def test_error_tree_callers_sort_by_type_not_by_attributes() -> None:
    assert is_expired(StatusError(410, "Gone")) and is_expired(error_from_status({"code": 410}))
    assert is_too_many_requests(StatusError(429))
    assert not is_expired(_CodeCarrier()) and not is_too_many_requests(_CodeCarrier())
    assert _is_api_error(StatusError(500)) and _is_api_error(FencedError("patch", "x", 1.0, 1.0))
    assert not _is_api_error(_CodeCarrier()) and not _is_api_error(TransportError("reset"))


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        pytest.param(error_from_status({"code": 404, "message": "m"}), LockNotFound, id="404"),
        pytest.param(
            error_from_status({"code": 409, "reason": "AlreadyExists", "message": "m"}),
            LockConflict,
            id="409-exists",
        ),
        pytest.param(error_from_status({"code": 409, "message": "m"}), LockConflict, id="409"),
        pytest.param(error_from_status({"code": 500, "message": "m"}), LockError, id="500"),
        pytest.param(_CodeCarrier("m"), LockError, id="not-api"),
    ],
)
def test_error_tree_lock_errors_map_api_errors_by_type(
    error: Exception, expected: type[LockError]
) -> None:
    assert type(_lock_error(error)) is expected
