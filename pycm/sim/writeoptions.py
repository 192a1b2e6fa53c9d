"""A write's options (create, update, patch, delete), decoded and validated as kube-apiserver's
handlers do, before the body is read.

- **Create, update, patch** (``ValidateCreateOptions`` and its siblings; 422 Invalid
  ``CreateOptions.meta.k8s.io ""`` — ``UpdateOptions``, ``PatchOptions`` — with every cause):
  ``fieldManager`` at most 128 bytes of printable characters, ``dryRun`` only ``All``,
  ``fieldValidation`` one of ``Ignore``, ``Warn``, ``Strict`` or empty; a patch that is not an
  apply takes no ``force``; an apply needs a ``fieldManager``.
- **Delete** (``DeleteOptions``): from the body when there is one, else from the query — never
  both, as kube reads them (a query beside a body is ignored). A query's
  ``gracePeriodSeconds`` is a Go int64 (400 with ``strconv``'s words); a body's fields must have
  their types (400). Then ``ValidateDeleteOptions`` (422 ``DeleteOptions.meta.k8s.io ""``):
  ``propagationPolicy`` is ``Foreground``, ``Background`` or ``Orphan``, not set together with
  ``orphanDependents``; ``dryRun`` only ``All``.

A valid ``dryRun=All`` is then refused (400): the emulator does not implement dry runs, and one
that wrote would be worse than none.
"""

from __future__ import annotations

from typing import Any

from pycm.sim import errors
from pycm.sim.errors import Cause
from pycm.sim.gc import BACKGROUND, FOREGROUND, ORPHAN
from pycm.sim.gostrconv import go_strings, parse_bool, parse_int64, quote
from pycm.sim.managedfields import field_manager_causes
from pycm.sim.store import DeleteOptions

__all__ = ["delete_options", "refuse_dry_run", "validate_write_options"]

# The options kind each verb's query decodes into (named in its 422).
_OPTIONS_KINDS = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}
_FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")  # kube's sorted set, as its message lists
_APPLY = "application/apply-patch+yaml"


def _not_supported(field: str, shown: str, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(quote(s) for s in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {shown}: supported values: {listed}",
        "field": field,
    }


def _dry_run_causes(dry_run: list[str] | None) -> list[Cause]:
    if dry_run is None or all(v == "All" for v in dry_run):
        return []
    shown = go_strings(dry_run)
    return [_not_supported("dryRun", shown, ("All",))]


def _is_apply(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == _APPLY


def validate_write_options(query: dict[str, str], verb: str, content_type: str = "") -> None:
    """422 when a create's, update's or patch's query options are invalid (every cause)."""
    causes: list[Cause] = []
    if verb == "patch" and "force" in query and not _is_apply(content_type):
        causes.append(
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: may not be specified for non-apply patch",
                "field": "force",
            }
        )
    if verb == "patch" and _is_apply(content_type) and not query.get("fieldManager"):
        # kubectl defaults it; controllers must set it.
        causes.append(
            {
                "reason": "FieldValueRequired",
                "message": "Required value: is required for apply patch",
                "field": "fieldManager",
            }
        )
    causes += field_manager_causes(query.get("fieldManager", ""))
    dry_run = query.get("dryRun")
    causes += _dry_run_causes(None if dry_run is None else [dry_run])
    validation = query.get("fieldValidation", "")
    if validation not in _FIELD_VALIDATION:
        causes.append(_not_supported("fieldValidation", quote(validation), _FIELD_VALIDATION))
    if causes:
        raise errors.invalid(_OPTIONS_KINDS[verb], "", causes, "meta.k8s.io")


def refuse_dry_run(query: dict[str, str]) -> None:
    """400 for a (valid) dry run: see the module's doc."""
    if "dryRun" in query:
        raise errors.bad_request("dryRun is not supported by the emulator")


def _type_error() -> errors.APIError:
    return errors.bad_request(
        "DeleteOptions in version v1 cannot be handled: a field has the wrong type"
    )


def delete_options(body: Any, query: dict[str, str]) -> DeleteOptions:
    """The DeleteOptions of a delete or deletecollection: ``body`` (decoded; None when empty)
    or else the query; 400 or 422 as the module says."""
    if body is not None:
        if not isinstance(body, dict):
            raise errors.bad_request("DeleteOptions must be a JSON object")
        policy = body.get("propagationPolicy")
        orphan = body.get("orphanDependents")
        grace = body.get("gracePeriodSeconds")
        preconditions = body.get("preconditions") or {}
        dry_run = body.get("dryRun")
        if (
            not (grace is None or (isinstance(grace, int) and not isinstance(grace, bool)))
            or not isinstance(preconditions, dict)
            or not all(isinstance(v, str) for v in preconditions.values() if v is not None)
            or not (policy is None or isinstance(policy, str))
            or not (orphan is None or isinstance(orphan, bool))
            or not (
                dry_run is None
                or (isinstance(dry_run, list) and all(isinstance(v, str) for v in dry_run))
            )
        ):
            raise _type_error()
    else:
        policy = query.get("propagationPolicy")
        orphan = None if "orphanDependents" not in query else parse_bool(query["orphanDependents"])
        grace = None
        if "gracePeriodSeconds" in query:
            try:
                grace = parse_int64(query["gracePeriodSeconds"])
            except ValueError as err:
                raise errors.bad_request(str(err)) from None
        preconditions = {}
        dry_run = [query["dryRun"]] if "dryRun" in query else None
    causes: list[Cause] = []
    if orphan is not None and policy is not None:
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {quote(policy)}: orphanDependents and "
                "deletionPropagation cannot be both set",
                "field": "propagationPolicy",
            }
        )
    if policy is not None and policy not in (FOREGROUND, BACKGROUND, ORPHAN):
        causes.append(
            _not_supported(
                "propagationPolicy", quote(policy), (FOREGROUND, BACKGROUND, ORPHAN, "nil")
            )
        )
    causes += _dry_run_causes(dry_run)
    if causes:
        raise errors.invalid("DeleteOptions", "", causes, "meta.k8s.io")
    if dry_run:
        raise errors.bad_request("dryRun is not supported by the emulator")
    if policy is None and orphan is not None:
        policy = ORPHAN if orphan else BACKGROUND
    return DeleteOptions(
        propagation_policy=policy,
        grace_period_seconds=grace,
        precondition_uid=preconditions.get("uid"),
        precondition_resource_version=preconditions.get("resourceVersion"),
    )
