"""The options of a write: ``CreateOptions``, ``UpdateOptions``, ``PatchOptions`` and
``DeleteOptions`` as kube-apiserver decodes and checks them (from the query, or from a
DELETE's body), and what admission webhooks are sent of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ....._foundations.go_compat import go_quote, parse_bool
from ...machinery.request_info import go_int
from ...machinery.status import Cause, StatusError
from ...machinery.unstructured import Obj
from ...machinery.validation import invalid
from .delete_body import decode_delete_body, delete_options_body

__all__ = ["DeleteOptions", "WriteOptions", "dry_run_of"]

_PROPAGATION: Final = ("Foreground", "Background", "Orphan")


def _dry_run_causes(values: Sequence[str]) -> list[Cause]:
    """``ValidateDryRun``: ``All`` or nothing."""
    if all(v == "All" for v in values):
        return []
    shown = "[]string{" + ", ".join(go_quote(v) for v in values) + "}"
    return [Cause("FieldValueNotSupported",
                  f'Unsupported value: {shown}: supported values: "All"', "dryRun")]


def dry_run_of(values: list[str], options_kind: str) -> bool:
    """The ``dryRun`` option: ``All`` or nothing (422 on ``options_kind`` otherwise)."""
    causes = _dry_run_causes(values)
    if causes:
        raise StatusError.invalid_options(options_kind, causes)
    return bool(values)


_FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")
FIELD_MANAGER_MAX_LENGTH: Final = 128


def _field_manager_causes(manager: str) -> list[Cause]:
    """``ValidateFieldManager``: at most 128 bytes, every character printable (Go's
    ``unicode.IsPrint``), each other one named with its byte position."""
    causes = []
    if len(manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        causes.append(Cause("FieldValueTooLong", f"Too long: must have at most "
                            f"{FIELD_MANAGER_MAX_LENGTH} bytes", "fieldManager"))
    position = 0
    for ch in manager:
        if not ch.isprintable():
            causes.append(invalid("fieldManager", manager, f"invalid character "
                                  f"U+{ord(ch):04X} (at position {position})"))
        position += len(ch.encode("utf-8", "surrogatepass"))
    return causes


@dataclass(slots=True)
class WriteOptions:
    """A create, update or patch's options, and the warnings its answer carries.

    ``field_validation``: what unknown fields do (``Strict``: 400; ``Warn``,
    the default: a warning each; ``Ignore``: nothing); they are pruned from
    custom resources either way. ``force``: an apply takes the fields other
    managers own instead of failing with a conflict.
    """

    dry_run: bool = False
    field_validation: str = "Warn"
    force: bool = False
    warnings: list[str] = field(default_factory=list)
    field_manager: str = ""
    validation_given: str = ""

    @classmethod
    def parse(cls, query: Mapping[str, str], dry_run: Sequence[str], options_kind: str, *,
              apply: bool | None = None) -> WriteOptions:
        """From the query: one 422 on ``options_kind`` naming every value kube-apiserver
        refuses, in its order (``ValidateCreateOptions``, ``ValidateUpdateOptions``,
        ``ValidatePatchOptions``; ``apply``: whether a patch is an apply, None for a
        create or update)."""
        manager = query.get("fieldManager", "")
        causes: list[Cause] = []
        if apply is False and "force" in query:
            causes.append(Cause("FieldValueForbidden", "Forbidden: may not be specified for "
                                "non-apply patch", "force"))
        if apply and not manager:
            causes.append(Cause("FieldValueRequired", "Required value: is required for apply "
                                "patch", "fieldManager"))
        causes += _field_manager_causes(manager)
        causes += _dry_run_causes(dry_run)
        validation = query.get("fieldValidation", "")
        if validation not in _FIELD_VALIDATION:
            causes.append(Cause(
                "FieldValueNotSupported", f"Unsupported value: {go_quote(validation)}: "
                'supported values: "", "Ignore", "Strict", "Warn"', "fieldValidation"))
        if causes:
            raise StatusError.invalid_options(options_kind, causes)
        force = query.get("force", "") in ("true", "1")
        return cls(bool(dry_run), validation or "Warn", force, field_manager=manager,
                   validation_given=validation)

    def review_options(self, kind: str) -> Obj:
        """The CreateOptions or UpdateOptions admission webhooks are sent."""
        out: Obj = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
        if self.dry_run:
            out["dryRun"] = ["All"]
        if self.field_manager:
            out["fieldManager"] = self.field_manager
        if self.validation_given:
            out["fieldValidation"] = self.validation_given
        return out


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    """``metav1.DeleteOptions``: from a DELETE's JSON body, or from its query without one."""

    uid: str | None = None
    resource_version: str | None = None
    grace_period: int | None = None
    propagation: str | None = None
    orphan_dependents: bool | None = None
    dry_run: bool = False

    @property
    def orphan(self) -> bool:
        return self.propagation == "Orphan" or self.orphan_dependents is True

    def review_options(self) -> Obj:
        """The DeleteOptions admission webhooks are sent."""
        out: Obj = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
        if self.grace_period is not None:
            out["gracePeriodSeconds"] = self.grace_period
        preconditions = {k: v for k, v in (("uid", self.uid),
                                           ("resourceVersion", self.resource_version)) if v}
        if preconditions:
            out["preconditions"] = preconditions
        if self.orphan_dependents is not None:
            out["orphanDependents"] = self.orphan_dependents
        if self.propagation is not None:
            out["propagationPolicy"] = self.propagation
        if self.dry_run:
            out["dryRun"] = ["All"]
        return out

    @property
    def finalizer(self) -> str | None:
        """The garbage collector's finalizer this deletion adds, if any."""
        if self.orphan:
            return "orphan"
        return "foregroundDeletion" if self.propagation == "Foreground" else None

    @classmethod
    def parse(cls, raw: bytes, query: Mapping[str, str],
              query_dry_run: Sequence[str] = (), content_type: str = "") -> DeleteOptions:
        """Decode and validate (500 for a body that does not decode into DeleteOptions as
        on kube-apiserver: see :mod:`.delete_body`; 415 for a body of a type it does not
        read; 400 for a bad query; 422 for bad values).

        ``query_dry_run`` holds the query's ``dryRun`` values (the parameter repeats).
        """
        grace: Any
        if raw.strip():
            body = delete_options_body(decode_delete_body(raw, content_type))
            pre = body.get("preconditions") or {}
            grace, policy = body.get("gracePeriodSeconds"), body.get("propagationPolicy")
            orphan, dry = body.get("orphanDependents"), body.get("dryRun") or []
        else:
            pre = {}
            grace = go_int(query["gracePeriodSeconds"]) if "gracePeriodSeconds" in query else None
            policy = query.get("propagationPolicy")
            orphan = _go_bool(query["orphanDependents"]) if "orphanDependents" in query else None
            dry = list(query_dry_run)
        causes = []
        if orphan is not None and policy is not None:
            causes.append(invalid("propagationPolicy", policy,
                                  "orphanDependents and deletionPropagation cannot be both set"))
        if policy is not None and policy not in _PROPAGATION:
            causes.append(Cause("FieldValueNotSupported", f"Unsupported value: {go_quote(policy)}"
                                ': supported values: "Foreground", "Background", "Orphan", "nil"',
                                "propagationPolicy"))
        if causes:
            raise StatusError.invalid_options("DeleteOptions", causes)
        return cls(pre.get("uid"), pre.get("resourceVersion"),
                   grace if isinstance(grace, int) else None, policy, orphan,
                   dry_run_of(["" if v is None else str(v) for v in dry], "DeleteOptions"))


def _go_bool(value: str) -> bool:
    """Go's ``strconv.ParseBool`` of a query parameter (400 BadRequest with its error)."""
    parsed = parse_bool(value)
    if parsed is None:
        raise StatusError.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')
    return parsed


