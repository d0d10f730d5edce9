"""What the generator is told beyond the manager: who the operator is, and how it is deployed.

:class:`ManifestNames` (its name, namespace and ServiceAccount) and
:class:`DeploymentOptions` (image, replicas, resources, certificates, the
container's arguments): each checks its values when made and raises
:class:`ManifestError` naming the bad one, so that a Deployment the API
server would refuse (a negative replica count, requests over limits, a
quantity it cannot read) is never written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Final, Literal

__all__ = [
    "CERTIFICATES",
    "Certificates",
    "DeploymentOptions",
    "ManifestError",
    "ManifestNames",
    "parse_resources",
]

Certificates = Literal["cert-manager", "self-signed"]
CERTIFICATES: Final[tuple[Certificates, ...]] = ("cert-manager", "self-signed")
RESOURCE_NAMES: Final = ("cpu", "memory")
DEFAULT_REQUESTS: Final = {"cpu": "50m", "memory": "96Mi"}
DEFAULT_LIMITS: Final = {"memory": "512Mi"}

# A resource quantity as kube-apiserver reads one (never negative here): a number, then a
# binary or decimal SI suffix or a decimal exponent.
_QUANTITY: Final = re.compile(
    r"^(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exponent>[+-]?\d+))?$")
_SCALE: Final = {"": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"),
                 "m": Decimal("1e-3"), "k": Decimal("1e3"), "M": Decimal("1e6"),
                 "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"),
                 "E": Decimal("1e18"), **{f"{p}i": Decimal(1024) ** (i + 1)
                                          for i, p in enumerate("KMGTPE")}}


class ManifestError(ValueError):
    """The manager or the options cannot be written as manifests; the message says why
    and what to do."""


@dataclass(frozen=True, slots=True)
class ManifestNames:
    """Who the operator is on the cluster: ``name`` (its Deployment, roles, bindings and
    Services, and their ``app.kubernetes.io/name`` label), the ServiceAccount
    ``service_account`` in ``namespace``, where it runs."""

    name: str
    namespace: str
    service_account: str

    @property
    def labels(self) -> dict[str, str]:
        """The label the Deployment's Pods carry and its Services select."""
        return {"app.kubernetes.io/name": self.name}


@dataclass(frozen=True, slots=True, kw_only=True)
class DeploymentOptions:
    """How the operator's Deployment runs it.

    ``image`` (None: ``NAME:latest``, retagged with ``kustomize edit set image``),
    ``replicas`` (at least 1), ``requests`` and ``limits`` (``cpu`` and ``memory``
    quantities; a request may not exceed its limit), ``certificates``: how its
    webhook server gets its serving certificate (``cert-manager``, or
    ``self-signed``: the server makes its own and writes its CA into the
    configurations), ``args``: the container's arguments (none: the image's
    ``CMD``). Raises :class:`ManifestError` naming a bad value.
    """

    image: str | None = None
    replicas: int = 1
    requests: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_REQUESTS))
    limits: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    certificates: Certificates = "cert-manager"
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.image is not None:
            check_image(self.image)
        if isinstance(self.replicas, bool) or not isinstance(self.replicas, int) \
                or self.replicas < 1:
            raise ManifestError(f"replicas must be a whole number, at least 1; "
                                f"got {self.replicas!r}")
        if self.certificates not in CERTIFICATES:
            raise ManifestError(f"certificates must be {' or '.join(CERTIFICATES)}; "
                                f"got {self.certificates!r}")
        for kind, values in (("requests", self.requests), ("limits", self.limits)):
            for resource, quantity in values.items():
                _check_resource(kind, resource, quantity)
        for resource, request in self.requests.items():
            limit = self.limits.get(resource)
            if limit is not None and quantity_value(request) > quantity_value(limit):
                raise ManifestError(f"the {resource} request {request} is over its limit "
                                    f"{limit}: the API server refuses such a Pod")

    def image_for(self, name: str) -> str:
        """The image to run: the one given, else ``NAME:latest``."""
        return self.image or f"{name}:latest"


def check_image(image: str) -> str:
    """``image``, or ManifestError when it is empty or holds white space."""
    if not image or any(c.isspace() for c in image):
        raise ManifestError(f"image {image!r} is not an image reference "
                            "(e.g. registry.example.com/my-operator:v1.2.0)")
    return image


def parse_resources(text: str) -> dict[str, str]:
    """``cpu=50m,memory=96Mi`` (kubectl set resources' syntax; empty: none) as a mapping;
    ManifestError naming what it cannot read."""
    out: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        resource, sep, quantity = item.partition("=")
        if not sep:
            raise ManifestError(f"{item!r} is not RESOURCE=QUANTITY (e.g. cpu=50m,memory=96Mi)")
        if resource.strip() in out:
            raise ManifestError(f"{resource.strip()} is given twice in {text!r}")
        out[resource.strip()] = quantity.strip()
        _check_resource("resources", resource.strip(), quantity.strip())
    return out


def _check_resource(kind: str, resource: str, quantity: str) -> None:
    if resource not in RESOURCE_NAMES:
        raise ManifestError(f"{kind}: {resource!r} is not one of {', '.join(RESOURCE_NAMES)}")
    quantity_value(quantity, f"{kind}: {resource}")


def quantity_value(quantity: str, what: str = "quantity") -> Decimal:
    """The value of a resource quantity (``50m`` is 0.05, ``96Mi`` 100663296);
    ManifestError when kube-apiserver could not read it."""
    found = _QUANTITY.match(quantity)
    if found is None:
        raise ManifestError(f"{what}: {quantity!r} is not a quantity (e.g. 50m, 0.5, 96Mi, 1G)")
    number = Decimal(found.group("number"))
    if found.group("exponent") is not None:
        return number.scaleb(int(found.group("exponent")))
    return number * _SCALE[found.group("suffix") or ""]
