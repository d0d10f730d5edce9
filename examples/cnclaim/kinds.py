"""The CNClaim operator's kinds, defined once in Python with :mod:`reconcilekit.crd`.

``CNPOOL_KIND``, ``CNCLAIM_KIND`` and ``CNCLAIMSET_KIND`` make the
CustomResourceDefinitions of ``manifests/crds.yaml`` (``.crd()``) and the
typed resources of group ``core.matrixorigin.io``, version ``v1alpha1``
(``.resource``); the ``TypedDict`` s are the objects' shapes. A class
docstring becomes its object's ``description`` in the schema, so the classes
whose objects the CRDs leave undescribed have comments instead.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, NotRequired, TypedDict

from reconcilekit.crd import (
    CustomKind,
    Description,
    Format,
    Int32,
    Int64,
    ListType,
    MaxLength,
    Minimum,
    MinLength,
    PrinterColumn,
    Rule,
    Scale,
    Version,
    marked,
)

__all__ = [
    "CNCLAIMSET_KIND",
    "CNCLAIM_KIND",
    "CNPOOL_KIND",
    "CNClaim",
    "CNClaimSet",
    "CNClaimSetSpec",
    "CNClaimSetStatus",
    "CNClaimSpec",
    "CNClaimStatus",
    "CNPool",
    "CNPoolSpec",
    "CNPoolStatus",
    "Condition",
    "LabelSelector",
    "LabelSelectorRequirement",
]

GROUP: Final = "core.matrixorigin.io"
VERSION: Final = "v1alpha1"
DateTime = Annotated[str, Format("date-time")]
AGE = PrinterColumn("Age", ".metadata.creationTimestamp", type="date")


class TemplateMetadata(TypedDict, total=False):  # the labels and annotations of a template
    labels: dict[str, str]
    annotations: dict[str, str]


# -- CNPool ---------------------------------------------------------------------------------

class PodTemplate(TypedDict, total=False):  # a core/v1 PodTemplateSpec, its spec free-form
    metadata: TemplateMetadata
    spec: dict[str, Any]


class CNPoolSpec(TypedDict):  # (no description in the CRD)
    replicas: Annotated[Int32, Minimum(0),
                        Description("Idle Pods wanted (Bound and Draining Pods come on top).")]
    podTemplate: NotRequired[Annotated[PodTemplate, Description(
        "The Pods the pool creates (a core/v1 PodTemplateSpec).")]]


class CNPoolStatus(TypedDict, total=False):
    idle: Int32
    bound: Int32
    draining: Int32


class CNPool(TypedDict):
    """CNPool keeps spec.replicas Idle CN Pods ready to be claimed."""

    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: NotRequired[CNPoolSpec]
    status: NotRequired[CNPoolStatus]


CNPOOL_KIND: Final = CustomKind(
    group=GROUP, kind="CNPool", plural="cnpools",
    versions=[Version(VERSION, CNPool, storage=True, printer_columns=[
        PrinterColumn("Replicas", ".spec.replicas"),
        PrinterColumn("Idle", ".status.idle"),
        PrinterColumn("Bound", ".status.bound"),
        PrinterColumn("Draining", ".status.draining"),
        AGE])])


# -- CNClaim --------------------------------------------------------------------------------

class LabelSelectorRequirement(TypedDict):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: NotRequired[list[str]]


class LabelSelector(TypedDict, total=False):
    matchLabels: dict[str, str]
    matchExpressions: list[LabelSelectorRequirement]


class PodRef(TypedDict, total=False):
    podName: str
    nodeName: str


@marked(Rule("has(self.poolName) || has(self.selector)",
             message="spec.poolName or spec.selector is required"))
class CNClaimSpec(TypedDict, total=False):
    poolName: Annotated[str, Description(
        "The pool whose Idle Pods (label pool.matrixorigin.io/pool-name) may be bound.")]
    selector: Annotated[LabelSelector, Description(
        "Which Idle Pods may be bound (a label selector), with or instead of poolName.")]
    podName: Annotated[str, Description(
        "The bound Pod; written by the operator, cleared when the Pod is lost.")]
    nodeName: Annotated[str, Description(
        "The bound Pod's node; written by the operator, cleared with podName.")]
    sourcePod: Annotated[PodRef, Description(
        "Set to the current Pod to migrate the claim to a new one; cleared when done.")]


class Condition(TypedDict):  # a metav1.Condition
    type: Annotated[str, MaxLength(316)]
    status: Literal["True", "False", "Unknown"]
    observedGeneration: NotRequired[Annotated[Int64, Minimum(0)]]
    lastTransitionTime: DateTime
    reason: Annotated[str, MaxLength(1024), MinLength(1)]
    message: Annotated[str, MaxLength(32768)]


class MigrationSource(TypedDict, total=False):
    connections: Int32


class Migration(TypedDict, total=False):
    source: MigrationSource


class CNClaimStatus(TypedDict, total=False):
    phase: Literal["Pending", "Bound", "Lost"]
    boundTime: DateTime
    conditions: Annotated[list[Condition], ListType("map", keys=("type",)), Description(
        "Bound (True once a Pod is bound; reason Pending or Lost otherwise).")]
    migrate: Migration


class CNClaim(TypedDict):
    """CNClaim claims one CN Pod of a pool."""

    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: NotRequired[CNClaimSpec]
    status: NotRequired[CNClaimStatus]


CNCLAIM_KIND: Final = CustomKind(
    group=GROUP, kind="CNClaim", plural="cnclaims",
    versions=[Version(VERSION, CNClaim, storage=True, printer_columns=[
        PrinterColumn("Pod", ".spec.podName"),
        PrinterColumn("Node", ".spec.nodeName"),
        PrinterColumn("Phase", ".status.phase"),
        PrinterColumn("Bound", '.status.conditions[?(@.type=="Bound")].status',
                      type="string", priority=1),
        AGE])])


# -- CNClaimSet -----------------------------------------------------------------------------

class CNClaimTemplate(TypedDict, total=False):
    metadata: TemplateMetadata
    spec: CNClaimSpec


class CNClaimSetSpec(TypedDict):
    replicas: Annotated[Int32, Minimum(0)]
    template: CNClaimTemplate


class CNClaimSetStatus(TypedDict, total=False):
    replicas: Int32
    readyReplicas: Annotated[Int32, Description("Claims Bound.")]
    labelSelector: str


class CNClaimSet(TypedDict):
    """CNClaimSet keeps spec.replicas CNClaims made from spec.template."""

    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: NotRequired[CNClaimSetSpec]
    status: NotRequired[CNClaimSetStatus]


CNCLAIMSET_KIND: Final = CustomKind(
    group=GROUP, kind="CNClaimSet", plural="cnclaimsets",
    versions=[Version(VERSION, CNClaimSet, storage=True,
                      scale=Scale(label_selector_path=".status.labelSelector"),
                      printer_columns=[PrinterColumn("Replicas", ".spec.replicas"),
                                       PrinterColumn("Bound", ".status.readyReplicas"),
                                       AGE])])
