"""The CNClaim validating webhook: refuse at admission what the CRD's schema cannot check.

The schema types each field; it cannot say that a selector's keys and values
are valid label syntax, that ``In``/``NotIn`` need values and
``Exists``/``DoesNotExist`` take none (:func:`~examples.cnclaim.spec.spec_problem`
names the field of each), nor who may change a binding. ``spec.podName`` and
``spec.nodeName`` record which Pod the operator bound: on an update only the
operator's own users may change them (anyone else would point a claim at a
Pod it does not hold, or hide the one it does). Creating a claim is not
restricted: a claim set or a user may create one already naming its Pod.

The operator's own updates are not reviewed: the configuration's match
condition (:func:`reconcilekit.webhook.exclude_users`) tells the API server
not to call for them (half the calls of a binding), and the handler allows
them when called all the same. The operator never changes a selector, and
its last write to a deleted claim, the finalizer's removal, must never be
refused.

The controller keeps checking with ``spec_problem`` too (a Warning Event and
no retries): a claim stored before the webhook was installed, or while it
was not called (``--no-webhooks``), is still refused a binding.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from reconcilekit import APIError, Client
from reconcilekit.kinds import SELF_SUBJECT_REVIEWS
from reconcilekit.webhook import AdmissionRequest, Verdict, WebhookServer, exclude_users

from .resources import CNCLAIMS, GROUP
from .spec import spec_problem

__all__ = ["WEBHOOK_NAME", "add_claim_webhook", "own_username"]

WEBHOOK_NAME = f"validate.cnclaims.{GROUP}"
logger = logging.getLogger("examples.cnclaim")


def add_claim_webhook(server: WebhookServer, *, operator_users: Collection[str] | None,
                      namespace: str | None = None) -> None:
    """Register the CNClaim validator on ``server``, scoped to ``namespace`` if given.

    ``operator_users``: who may change a binding (:func:`own_username` finds
    the operator's); None when the server cannot say who the operator is:
    then bindings are not guarded (logged once), rather than the operator
    refused its own writes.
    """
    selector = ({"matchLabels": {"kubernetes.io/metadata.name": namespace}}
                if namespace else None)
    users = frozenset(operator_users) if operator_users is not None else None
    if users is None:
        logger.info("the API server does not say who this operator is: spec.podName and "
                    "spec.nodeName changes are not restricted to it at admission")

    own_updates = exclude_users(*sorted(users), operations=("UPDATE",)) if users else {}

    @server.validator(CNCLAIMS, name=WEBHOOK_NAME, namespace_selector=selector,
                      match_conditions=own_updates)
    async def validate_claim(request: AdmissionRequest) -> Verdict:
        if request.operation == "UPDATE" and users is not None and \
                request.user.username in users:
            return Verdict.allow()  # what the match condition gives without a call
        claim = request.object or {}
        problem = spec_problem(claim)
        if problem:
            return Verdict.deny(problem)
        if request.operation == "UPDATE" and users is not None:
            old_spec = (request.old_object or {}).get("spec") or {}
            spec = claim.get("spec") or {}
            for field in ("podName", "nodeName"):
                if old_spec.get(field) != spec.get(field):
                    return Verdict.deny(
                        f"spec.{field}: only the CNClaim operator records a binding; "
                        f"{request.user.username or 'this user'} may not change it")
        return Verdict.allow()


async def own_username(client: Client) -> str | None:
    """Who the API server says ``client`` is (a SelfSubjectReview); None if it cannot say."""
    try:
        review = await client.create(SELF_SUBJECT_REVIEWS, {
            "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    except APIError:  # an older server, or no right to ask: the caller decides
        return None
    username = ((review.get("status") or {}).get("userInfo") or {}).get("username")
    return str(username) if username else None
